// `segment <image|folder>... --out <dir>`: the flags, the run, the summary, the exit status.
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import type { ModelRecord } from "../../schema/api-records.ts";
import { segmentParams } from "../../schema/api.ts";
import { MODALITIES } from "../../schema/modality.ts";
import {
  CELLPROB_THRESHOLD_RANGE,
  expansionReachRefusal,
  FLOW_THRESHOLD_RANGE,
  MAX_DIAMETER_PX,
  MAX_EXPANSION_REACH_PX,
  MIN_DIAMETER_PX,
} from "../../schema/work-limits.ts";
import { FLAG_OF_FIELD, inClientWords } from "../api-words.ts";
import { CLOUDFLARE_BODY_LIMIT, DEFAULT_RESUMABLE_ABOVE } from "../body-limit.ts";
import { CONNECTION_HELP, CONNECTION_OPTIONS, connect, UsageError } from "../connection.ts";
import { MEASUREMENT_GROUP_NAMES } from "../../schema/measurements.ts";
import { MEASUREMENT_COLUMN_NAMES } from "../../common/measurement-columns.ts";
import { PNG_MAX_LABEL } from "../../schema/label-png-limit.ts";
import { EXPORT_FILES, type ExportFormat, isExportFormat } from "../exports.ts";
import { positiveNumber } from "../flags.ts";
import { AUTO_MODEL } from "../model-choice.ts";
import { formatBytes } from "../format.ts";
import type { Http } from "../http.ts";
import { collectInputs, IMAGE_EXTENSIONS, type InputFile } from "../inputs.ts";
import type { Interruption } from "../interruption.ts";
import { OVERLAY_MAX_PIXELS } from "../overlay.ts";
import { createDisplay } from "../progress.ts";
import { STATE_FILE } from "../resume-state.ts";
import { type ImageOutcome, runSegment, type SegmentOptions } from "../segment-run.ts";
import { summaryTable } from "../summary.ts";

const MODALITY_CHOICES = ["auto", ...MODALITIES] as const;

export const SEGMENT_HELP = `npm run client -- segment <image|folder>... --out <dir> [options]

Uploads each image (the TIFF, PNG and JPEG files directly inside each folder), segments them one
after another (your organization runs one prediction at a time; the client waits its turn), and
saves the exports as <dir>/<image name>/{${Object.values(EXPORT_FILES).join(",")}}; above
${PNG_MAX_LABEL.toLocaleString("en-US")} cells the label mask is masks.tif (32-bit labels) instead of masks.png.
Interrupted, run the same command again: it resumes from ${STATE_FILE} in <dir>.
Exits 0 only if every image was segmented and exported.

  --out DIR               where the exports go (required)
  --model ID|auto         model to segment with (default: auto, each image's public model as the service
                          recommends it for the image's modality, read here from the file: cpsam for
                          fluorescence, cpsam-large for brightfield, cpsam-histology for stained
                          histology; see \`npm run client -- models\`)
  --diameter D            object diameter in pixels, ${MIN_DIAMETER_PX} to ${MAX_DIAMETER_PX}; 0 or auto: estimate it (the default)
  --channels A,B          Cellpose's channels: segment A, nucleus B; 1-based, 0 = grayscale
  --modality M            ${MODALITY_CHOICES.join(", ")}: what the one-channel model's input is made
                          for (default auto: detected from the pixels; brightfield and histology
                          are inverted so nuclei read bright)
  --cellprob-threshold T  Cellpose's cell probability threshold, ${CELLPROB_THRESHOLD_RANGE.min} to ${CELLPROB_THRESHOLD_RANGE.max} (default: the model's;
                          lower finds more, fainter cells)
  --flow-threshold T      Cellpose's flow error threshold, ${FLOW_THRESHOLD_RANGE.min} to ${FLOW_THRESHOLD_RANGE.max} (default: the model's; higher
                          keeps more irregular shapes)
  --min-size PX           drop cells smaller than PX pixels (default: the model's)
  --augment               Cellpose's test-time augmentation (4x the network time)
  --pixel-size UM         micrometres per pixel for the calibrated columns (default: the file's)
  --cell-expansion D      grow each nucleus into a cell by D micrometres (5um) or pixels (8px),
                          as QuPath's cell expansion: the cell columns; it may reach at most
                          ${MAX_EXPANSION_REACH_PX} px (the service answers a longer one with the limit)
  --cell-objects          save rois.geojson as QuPath cell objects (each cell's outline, its nucleus
                          inside as nucleusGeometry) instead of nuclei; needs --cell-expansion
  --formats LIST          exports to save, any of ${Object.keys(EXPORT_FILES).join(",")} (default: all)
  --columns LIST          measurement columns of measurements.csv and of rois.geojson's properties, in
                          order: column names or groups (${MEASUREMENT_GROUP_NAMES.join(", ")}), e.g. default,shape,intensity
                          (default: the service's 20 default columns; \`columns\` in the API reference)
  --resumable-above BYTES files above this size upload in parts (default ${formatBytes(DEFAULT_RESUMABLE_ABOVE)})
  --body-limit BYTES      the largest request your zone accepts (default ${CLOUDFLARE_BODY_LIMIT}, Cloudflare's
                          Free and Pro limit); no one-call upload or part goes above it
  --overlay               also draw the cells' outlines over the image (contrast-stretched as the
                          dashboard shows it) into <dir>/<image name>/<image name>-overlay.png;
                          needs the geojson export; images above ${OVERLAY_MAX_PIXELS / 2 ** 20} megapixels get none
  --poll SECONDS          first wait between status polls (default 1; grows to 10 while nothing changes)

${CONNECTION_HELP}`;

const SEGMENT_OPTIONS = {
  ...CONNECTION_OPTIONS,
  out: { type: "string" },
  model: { type: "string", default: AUTO_MODEL },
  diameter: { type: "string" },
  channels: { type: "string" },
  "pixel-size": { type: "string" },
  "cell-expansion": { type: "string" },
  modality: { type: "string" },
  "cellprob-threshold": { type: "string" },
  "flow-threshold": { type: "string" },
  "min-size": { type: "string" },
  augment: { type: "boolean" },
  formats: { type: "string", default: Object.keys(EXPORT_FILES).join(",") },
  columns: { type: "string" },
  "resumable-above": { type: "string" },
  "body-limit": { type: "string" },
  poll: { type: "string", default: "1" },
  overlay: { type: "boolean", default: false },
  "cell-objects": { type: "boolean", default: false },
} as const;

interface PredictionFlags {
  diameter?: string;
  channels?: string;
  "pixel-size"?: string;
  "cell-expansion"?: string;
  modality?: string;
  "cellprob-threshold"?: string;
  "flow-threshold"?: string;
  "min-size"?: string;
  augment?: boolean;
}

/** A number flag that may be negative (the thresholds); the range is the service's schema's, checked below. */
function numberFlag(value: string, flag: string): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n)) throw new UsageError(`${flag} must be a number, not ${JSON.stringify(value)}`);
  return n;
}

// Exported for its test only (test/client/segment-flags.test.ts).
/**
 * The prediction's parameters from the flags, checked against the service's own schema
 * (schema/api.ts's segmentParams) here, so a value out of range is refused before any upload,
 * in the flag's name (api-words.ts).
 */
export function predictionParams(values: PredictionFlags): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  if (values["pixel-size"] !== undefined) params.pixel_size_um = positiveNumber(values["pixel-size"], "--pixel-size");
  if (values["cell-expansion"] !== undefined) {
    const match = /^\s*([0-9.]+)\s*(um|µm|px)\s*$/.exec(values["cell-expansion"]);
    if (!match) throw new UsageError(`--cell-expansion takes a distance with its unit, such as 5um or 8px, not ${JSON.stringify(values["cell-expansion"])}`);
    params[match[2] === "px" ? "cell_expansion_px" : "cell_expansion_um"] = positiveNumber(match[1]!, "--cell-expansion");
  }
  if (values.diameter !== undefined) params.diameter = values.diameter === "auto" ? "auto" : positiveNumber(values.diameter, "--diameter", true);
  if (values.channels !== undefined) {
    const channels = values.channels.split(",").map((c) => Number(c));
    if (channels.length < 1 || channels.length > 2 || channels.some((c) => !Number.isInteger(c) || c < 0)) {
      throw new UsageError(`--channels takes one or two whole numbers such as 2,3 (0 = grayscale), not ${JSON.stringify(values.channels)}`);
    }
    params.channels = channels;
  }
  if (values.modality !== undefined) {
    if (!(MODALITY_CHOICES as readonly string[]).includes(values.modality))
      throw new UsageError(`--modality takes ${MODALITY_CHOICES.join(", ")}, not ${JSON.stringify(values.modality)}`);
    params.modality = values.modality;
  }
  if (values["cellprob-threshold"] !== undefined) params.cellprob_threshold = numberFlag(values["cellprob-threshold"], "--cellprob-threshold");
  if (values["flow-threshold"] !== undefined) params.flow_threshold = numberFlag(values["flow-threshold"], "--flow-threshold");
  if (values["min-size"] !== undefined) params.min_size = positiveNumber(values["min-size"], "--min-size", true);
  if (values.augment) params.augment = true;
  const checked = segmentParams.safeParse(params);
  if (!checked.success) {
    throw new UsageError(
      checked.error.issues
        .map((issue) => {
          const field = String(issue.path[0] ?? "");
          const flag = FLAG_OF_FIELD[field]?.flag ?? field;
          return `${flag}: ${inClientWords(issue.message)}`;
        })
        .join("; "),
    );
  }
  return params;
}

// Exported for its test only (test/client/segment-flags.test.ts).
/**
 * What the client can tell before uploading: a cell expansion in µm needs the pixel size, and PNG
 * and JPEG files carry none, so without --pixel-size they are refused here rather than after
 * their upload; with --pixel-size the expansion's reach is checked against the limit.
 */
export function refuseBeforeUpload(params: Record<string, unknown>, inputs: readonly InputFile[]): void {
  const um = params.cell_expansion_um as number | undefined;
  if (um === undefined) return;
  const given = params.pixel_size_um as number | undefined;
  if (given !== undefined) {
    const refusal = expansionReachRefusal({ um, pixelSize: { x: given, y: given } });
    if (refusal) throw new UsageError(`--cell-expansion ${um}um at --pixel-size ${given}: ${inClientWords(refusal)}`);
    return;
  }
  const uncalibrated = inputs.filter((input) => /\.(png|jpe?g)$/i.test(input.name));
  if (uncalibrated.length > 0) {
    const names =
      uncalibrated
        .slice(0, 3)
        .map((i) => i.name)
        .join(", ") + (uncalibrated.length > 3 ? `, and ${uncalibrated.length - 3} more` : "");
    throw new UsageError(
      `--cell-expansion ${um}um needs the pixel size, and PNG and JPEG files carry none (${names}): add --pixel-size UM, or give the distance in pixels (--cell-expansion 8px)`,
    );
  }
}

// Exported for its test only (test/client/segment-flags.test.ts).
/**
 * `--columns`: names of columns or groups, checked against the list the service serves; the
 * intensity and cytoplasm columns are named by each image's channels (intensity_<channel>_<statistic>),
 * so the service checks those.
 */
export function measurementColumns(list: string | undefined): string[] {
  if (list === undefined) return [];
  const names = list
    .split(",")
    .map((c) => c.trim())
    .filter(Boolean);
  const known = new Set<string>([...MEASUREMENT_COLUMN_NAMES, ...MEASUREMENT_GROUP_NAMES]);
  const unknown = names.filter((n) => !known.has(n) && !n.startsWith("intensity_") && !n.startsWith("cytoplasm_"));
  if (unknown.length || names.length === 0)
    throw new UsageError(
      `--columns takes measurement columns or groups; not ${unknown.join(", ") || "nothing"}. Groups: ${MEASUREMENT_GROUP_NAMES.join(", ")}; columns: ${MEASUREMENT_COLUMN_NAMES.join(", ")}, and intensity_ or cytoplasm_<channel>_<mean|median|std|min|max|sum>`,
    );
  return names;
}

function exportFormats(list: string): ExportFormat[] {
  const names = list
    .split(",")
    .map((f) => f.trim())
    .filter(Boolean);
  const unknown = names.filter((f) => !isExportFormat(f));
  if (unknown.length || names.length === 0)
    throw new UsageError(`--formats takes ${Object.keys(EXPORT_FILES).join(", ")}; not ${unknown.join(", ") || "nothing"}`);
  return [...new Set(names)] as ExportFormat[];
}

interface SegmentIo {
  out: NodeJS.WritableStream;
  /** Tests hand in an Http with an injected fetch; the CLI connects from flags and environment. */
  http?: Http;
  /** Asked for on Ctrl-C by the CLI. */
  interruption?: Interruption;
}

export async function segmentCommand(args: string[], io: SegmentIo): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: SEGMENT_OPTIONS, allowPositionals: true });
  if (values.help) {
    io.out.write(`${SEGMENT_HELP}\n`);
    return 0;
  }
  if (!values.out) throw new UsageError("--out <dir> is required: the exports (and the resume state) go there");
  if (positionals.length === 0) throw new UsageError("Name at least one image or folder to segment");
  const out = resolve(values.out);
  const inputs = collectInputs(positionals, out);
  if (inputs.length === 0) throw new UsageError(`No images (${[...IMAGE_EXTENSIONS].join(", ")}) in ${positionals.join(", ")}`);
  const pollMs = positiveNumber(values.poll, "--poll") * 1000;
  const formats = exportFormats(values.formats);
  if (values.overlay && !formats.includes("geojson")) throw new UsageError("--overlay draws the outlines from rois.geojson: add geojson to --formats");
  if (values["cell-objects"] && values["cell-expansion"] === undefined)
    throw new UsageError("--cell-objects saves the cells grown around the nuclei: give --cell-expansion too (5um or 8px, say)");
  const params = predictionParams(values);
  refuseBeforeUpload(params, inputs);
  const options: SegmentOptions = {
    inputs,
    out,
    modelId: values.model,
    params,
    formats,
    columns: measurementColumns(values.columns),
    cellObjects: values["cell-objects"],
    overlay: values.overlay,
    resumableAbove: values["resumable-above"] === undefined ? DEFAULT_RESUMABLE_ABOVE : positiveNumber(values["resumable-above"], "--resumable-above", true),
    bodyLimit: values["body-limit"] === undefined ? CLOUDFLARE_BODY_LIMIT : positiveNumber(values["body-limit"], "--body-limit"),
    wait: { pollMs, maxPollMs: Math.max(pollMs, 10_000) },
    interruption: io.interruption,
  };
  const display = createDisplay(io.out);
  const http = io.http ?? connect(values, { log: (m) => display.log(`retrying: ${m}`) });
  // A wrong key or model fails here, before anything is uploaded.
  const images = `${inputs.length} image${inputs.length === 1 ? "" : "s"}`;
  if (options.modelId === AUTO_MODEL) {
    options.models = await http.json<ModelRecord[]>("GET", "/models");
    display.log(`Segmenting ${images}, each with the public model recommended for its modality, into ${out}`);
  } else {
    const model = await http.json<ModelRecord>("GET", `/models/${encodeURIComponent(options.modelId)}`);
    display.log(`Segmenting ${images} with ${model.name} ${model.version} into ${out}`);
  }
  let outcomes: ImageOutcome[];
  try {
    outcomes = await runSegment(http, options, display);
  } finally {
    display.close();
  }
  io.out.write(`\n${summaryTable(outcomes, out)}\n`);
  if (outcomes.some((o) => o.interrupted)) {
    io.out.write("Interrupted. Run the same command again to resume.\n");
    return 130;
  }
  return outcomes.every((o) => o.ok) ? 0 : 1;
}
