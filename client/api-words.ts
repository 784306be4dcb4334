// The service's refusals in the client's words: the one map from the API's field names to the
// client's flags, used wherever the client shows a refusal (ApiError's detail, its local checks of
// the prediction parameters). "422 body.params.cell_expansion_um: ... add pixel_size_um, or give
// cell_expansion_px" reads "--cell-expansion: ... add --pixel-size, or give --cell-expansion in
// pixels (8px)".

/** Each API field the client has a flag for: the flag, and how running text names it. */
export const FLAG_OF_FIELD: Record<string, { flag: string; words?: string }> = {
  model_id: { flag: "--model" },
  diameter: { flag: "--diameter" },
  channels: { flag: "--channels" },
  pixel_size_um: { flag: "--pixel-size" },
  cell_expansion_um: { flag: "--cell-expansion", words: "--cell-expansion in micrometres (5um)" },
  cell_expansion_px: { flag: "--cell-expansion", words: "--cell-expansion in pixels (8px)" },
  modality: { flag: "--modality" },
  cellprob_threshold: { flag: "--cellprob-threshold" },
  flow_threshold: { flag: "--flow-threshold" },
  min_size: { flag: "--min-size" },
  augment: { flag: "--augment" },
  columns: { flag: "--columns" },
  objects: { flag: "--cell-objects" },
  name: { flag: "--name" },
  steps: { flag: "--steps" },
};

const FIELDS = Object.keys(FLAG_OF_FIELD).join("|");
/** A 422 item's location as http.ts writes it: body.params.<field>: / query.<field>: ... */
const LOCATION = new RegExp(`(?:^|(?<=; ))(?:body|query|path)(?:\\.params)?\\.(${FIELDS})(?:\\.\\d+)?: `, "g");
/**
 * A field named in running text: any as params.<field>, and bare only the snake_case names no
 * sentence uses otherwise (cell_expansion_um yes; "channels" or "name" stay words).
 */
const SNAKE = Object.keys(FLAG_OF_FIELD)
  .filter((f) => f.includes("_"))
  .join("|");
const MENTION = new RegExp(`(?<![\\w.-])(?:params\\.(${FIELDS})|(${SNAKE}))(?!\\w)`, "g");

/** The service's text with its field names given as the client's flags. */
export function inClientWords(detail: string): string {
  return detail
    .replace(LOCATION, (_, field: string) => `${FLAG_OF_FIELD[field]!.flag}: `)
    .replace(MENTION, (_, prefixed: string | undefined, bare: string | undefined) => {
      const words = FLAG_OF_FIELD[(prefixed ?? bare)!]!;
      return words.words ?? words.flag;
    });
}
