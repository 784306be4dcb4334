// `compare <image> --models A,B --out <dir>`: one image segmented with each model side by side, so
// a user can tell which to believe (issue #46): each model's cells, an overlay of its outlines in
// <dir>/<model>/<image>/, and, where the image has an annotation imported for it (`import`), AP@0.5 and
// AP@0.75 of each against it, scored as training and the benches score (common/scoring).
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { decodeImage } from "../../common/decode/index.ts";
import { averagePrecision } from "../../common/scoring/average-precision.ts";
import type { ModelRecord, SegmentationPage } from "../../schema/api-records.ts";
import { CLOUDFLARE_BODY_LIMIT, DEFAULT_RESUMABLE_ABOVE } from "../body-limit.ts";
import { CONNECTION_HELP, CONNECTION_OPTIONS, connect, UsageError } from "../connection.ts";
import { downloadExport, exportFile } from "../exports.ts";
import { positiveNumber } from "../flags.ts";
import type { Http } from "../http.ts";
import { collectInputs } from "../inputs.ts";
import { overlayFile } from "../overlay.ts";
import { createDisplay } from "../progress.ts";
import { runSegment } from "../segment-run.ts";

export const COMPARE_HELP = `npm run client -- compare <image> --models A,B[,...] --out <dir>

Segments one image with each model (uploading it once) and prints, per model, its cells, the
overlay of its outlines (<dir>/<model>/<name>/<name>-overlay.png) and, where the image has an annotation
you imported for it (\`npm run client -- import\`), AP@0.5 and AP@0.75 against that annotation.
For choosing between a base model and one fine-tuned from it, or between public models.

  --models IDS          two or more model ids, comma-separated (see \`npm run client -- models\`)
  --out DIR             where each model's exports and overlay go, one folder per model
  --poll SECONDS        first wait between status polls (default 2)

${CONNECTION_HELP}`;

const COMPARE_OPTIONS = {
  ...CONNECTION_OPTIONS,
  models: { type: "string" },
  out: { type: "string" },
  poll: { type: "string", default: "2" },
  help: { type: "boolean" },
} as const;

interface ModelOutcome {
  modelId: string;
  cells: number | null;
  overlay: string | null;
  masks: string | null;
  error: string | null;
}

/** The label image of a masks export (16-bit PNG or 32-bit TIFF), as integer labels. */
function labelsOf(path: string): { width: number; height: number; labels: Uint32Array } {
  const image = decodeImage(new Uint8Array(readFileSync(path)));
  return { width: image.width, height: image.height, labels: Uint32Array.from(image.data) };
}

/** The most recent annotation imported for the image, downloaded as its label mask; null where there is none. */
async function importedAnnotation(http: Http, imageId: string, dir: string): Promise<string | null> {
  const page = await http.json<SegmentationPage>("GET", `/segmentations?image_id=${encodeURIComponent(imageId)}&limit=50`);
  const imported = page.items.find((segmentation) => segmentation.source === "import");
  if (!imported) return null;
  return downloadExport(http, imported.id, exportFile("masks", imported.cell_count), dir, { columns: [] }, "masks");
}

export async function compareCommand(args: string[], out: NodeJS.WritableStream): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: COMPARE_OPTIONS, allowPositionals: true });
  if (values.help) {
    out.write(`${COMPARE_HELP}\n`);
    return 0;
  }
  const modelIds = (values.models ?? "")
    .split(",")
    .map((id) => id.trim())
    .filter(Boolean);
  if (modelIds.length < 2) throw new UsageError("--models takes two or more model ids, comma-separated");
  if (new Set(modelIds).size !== modelIds.length) throw new UsageError("--models names a model twice");
  if (!values.out) throw new UsageError("--out <dir> is required: each model's exports and overlay go there");
  if (positionals.length !== 1) throw new UsageError("Name one image file to compare the models on");
  const dir = resolve(values.out);
  const inputs = collectInputs(positionals, dir);
  if (inputs.length !== 1) throw new UsageError(`${positionals[0]} is not an image file the client reads`);
  const pollMs = positiveNumber(values.poll, "--poll") * 1000;

  const display = createDisplay(out);
  const http = connect(values, { log: (m) => display.log(`retrying: ${m}`) });
  const outcomes: ModelOutcome[] = [];
  let imageId: string | null = null;
  try {
    // A wrong id fails here, before anything is uploaded.
    for (const id of modelIds) await http.json<ModelRecord>("GET", `/models/${encodeURIComponent(id)}`);
    for (const modelId of modelIds) {
      const modelDir = join(dir, modelId);
      // Each image's exports go to a folder of its own (segment's layout).
      const imageDir = join(modelDir, inputs[0]!.folder);
      const [outcome] = await runSegment(
        http,
        {
          inputs,
          out: modelDir,
          modelId,
          params: {},
          formats: ["geojson", "masks"],
          overlay: true,
          resumableAbove: DEFAULT_RESUMABLE_ABOVE,
          bodyLimit: CLOUDFLARE_BODY_LIMIT,
          wait: { pollMs, maxPollMs: Math.max(pollMs, 10_000) },
        },
        display,
      );
      imageId ??= outcome!.imageId;
      outcomes.push({
        modelId,
        cells: outcome!.cellCount,
        overlay: outcome!.ok && !outcome!.note ? join(imageDir, overlayFile(inputs[0]!.name)) : null,
        masks: outcome!.ok && outcome!.cellCount !== null ? join(imageDir, exportFile("masks", outcome!.cellCount)) : null,
        error: outcome!.error,
      });
    }
  } finally {
    display.close();
  }
  const truthPath = imageId ? await importedAnnotation(http, imageId, dir) : null;
  const truth = truthPath ? labelsOf(truthPath) : null;
  const rows = outcomes.map((o) => {
    if (o.error) return `${o.modelId.padEnd(28)} failed: ${o.error}`;
    let scores = "";
    if (truth && o.masks) {
      const predicted = labelsOf(o.masks);
      const [ap50, ap75] = averagePrecision(truth.labels, predicted.labels, [0.5, 0.75]).ap;
      scores = `${ap50!.toFixed(3).padStart(8)} ${ap75!.toFixed(3).padStart(8)}`;
    }
    return `${o.modelId.padEnd(28)}${String(o.cells ?? "-").padStart(8)}${truth ? scores : ""}  ${o.overlay ?? "(no overlay)"}`;
  });
  out.write(`\n${inputs[0]!.name}${imageId ? ` (image ${imageId})` : ""}\n`);
  out.write(`${"model".padEnd(28)}${"cells".padStart(8)}${truth ? `${"AP@0.5".padStart(9)}${"AP@0.75".padStart(9)}` : ""}  overlay\n`);
  for (const row of rows) out.write(`${row}\n`);
  out.write(
    truth
      ? `AP against the annotation you imported for this image (${truthPath}).\n`
      : "No annotation was imported for this image: import one (npm run client -- import) to score the models against it.\n",
  );
  return outcomes.every((o) => o.error === null) ? 0 : 1;
}
