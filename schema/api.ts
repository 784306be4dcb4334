// Requests of the public API (/api/v1): bodies, path and query parameters. Responses: api-records.ts.
import { z } from "zod";
import { IMAGE_STATUSES, JOB_STATUSES } from "./db.ts";
import { MICROSCOPE_PIXEL_SIZE_UM } from "./image-formats/calibration.ts";
import { modalityParam } from "./modality.ts";
import { CELLPROB_THRESHOLD_RANGE, FLOW_THRESHOLD_RANGE, MAX_DIAMETER_PX, MAX_EXPANSION_REACH_PX, MAX_NITER, MIN_DIAMETER_PX } from "./work-limits.ts";

const id = z.string().min(1).max(100);

const PIXEL_SIZE_RANGE = `pixel_size_um is ${MICROSCOPE_PIXEL_SIZE_UM.min} to ${MICROSCOPE_PIXEL_SIZE_UM.max} µm, the pixel sizes microscopes produce`;

/** An image's name: the resumable upload's `name`, or the file name of a streamed upload's part. */
export const imageName = z.string().min(1).max(255);

/**
 * How a body that names a field it does not have is answered: a 422 naming the field, never a
 * request carried out without it (a prediction's `diameter` beside `params` once ran with the defaults).
 */
function unknownFields(request: string, hint: (keys: string[]) => string = () => "") {
  return {
    error: (issue: { code?: string; keys?: string[] }) => {
      if (issue.code !== "unrecognized_keys" || !issue.keys) return undefined;
      const names = issue.keys.map((k) => `"${k}"`).join(", ");
      return `${names} ${issue.keys.length > 1 ? "are not fields" : "is not a field"} of ${request}${hint(issue.keys)}`;
    },
  };
}

/** A SHA-256 digest as 64 hex digits, read in lowercase. */
const sha256 = z
  .string()
  .regex(/^[0-9a-fA-F]{64}$/, "a SHA-256 is 64 hexadecimal digits")
  .transform((hex) => hex.toLowerCase());

export const resumableUploadBody = z
  .strictObject(
    {
      name: imageName.meta({ description: "The image's name (its file name)" }),
      size: z.number().int().min(1).meta({ description: "The file's exact size in bytes; the part plan is computed from it" }),
      sha256: sha256
        .optional()
        .meta({ description: "The file's SHA-256, as the client computed it: recorded, so the file can be found again (`GET /images?sha256=`)" }),
    },
    unknownFields("a resumable upload"),
  )
  .meta({ id: "ResumableUploadRequest" });

/**
 * Object diameter in pixels. Cellpose's convention: 0 means "estimate it from the image"; null,
 * "auto" and leaving it out mean the same. `requestedDiameter` is the one reading of it. A named
 * diameter lies within MIN_DIAMETER_PX..MAX_DIAMETER_PX (schema/work-limits.ts): it multiplies the
 * work (block margins grow with it, the network's pixels with the enlargement below the model's).
 */
const diameter = z.union([
  z
    .number()
    .min(0)
    .max(MAX_DIAMETER_PX, { error: `diameter is at most ${MAX_DIAMETER_PX} px, the limit (downscale the image for larger objects)` })
    .refine((d) => !(d > 0 && d < MIN_DIAMETER_PX), {
      error: `diameter is at least ${MIN_DIAMETER_PX} px, the limit (0 or "auto" estimates it)`,
    }),
  z.literal("auto"),
  z.null(),
]);

export function requestedDiameter(value: unknown): number | undefined {
  return typeof value === "number" && value > 0 ? value : undefined;
}

/** Cellpose's parameters; anything left out takes the model's or Cellpose's default. */
const segmentParamFields = z.strictObject(
  {
    diameter: diameter.optional().meta({
      description: `Object diameter in pixels, ${MIN_DIAMETER_PX} to ${MAX_DIAMETER_PX} (the limits: it multiplies the work; past them 422); 0, null or "auto" (or leaving it out): estimated from the image`,
    }),
    cellprob_threshold: z
      .number()
      .min(CELLPROB_THRESHOLD_RANGE.min)
      .max(CELLPROB_THRESHOLD_RANGE.max)
      .optional()
      .meta({
        description: `Pixels whose cell-probability logit is above this are traced (default 0); ${CELLPROB_THRESHOLD_RANGE.min} to ${CELLPROB_THRESHOLD_RANGE.max}, the range of the logits (Cellpose's documentation)`,
      }),
    flow_threshold: z
      .number()
      .min(FLOW_THRESHOLD_RANGE.min)
      .max(FLOW_THRESHOLD_RANGE.max)
      .optional()
      .meta({
        description: `Masks whose flow error is above this are dropped (default: the model's, Cellpose's 0.4; 0 turns the check off); at most ${FLOW_THRESHOLD_RANGE.max}`,
      }),
    min_size: z.number().int().min(0).optional(),
    niter: z
      .number()
      .int()
      .min(1)
      .max(MAX_NITER, { error: `niter is at most ${MAX_NITER}, ten times Cellpose's default of 200 (it multiplies the mask stage's work)` })
      .optional()
      .meta({
        description: `Flow steps at the network's scale (default 200, Cellpose's); at most ${MAX_NITER}. They multiply the work with the pixels and the diameter: past the work a prediction may do, 422 naming the parameter`,
      }),
    augment: z.boolean().optional().meta({
      description: "Cellpose's test-time augmentation: the network also runs on mirrored copies and averages them (4x the network time; default false)",
    }),
    // Cellpose's convention: [channel to segment, nuclear channel], 1-based, 0 = grayscale (the mean
    // of all channels, the default). One-channel models such as cpsam read the first entry only.
    channels: z
      .array(z.number().int().min(0).max(64))
      .min(1)
      .max(2)
      .optional()
      .meta({ description: "[channel to segment, nuclear channel], 1-based; 0 = the mean of all channels (default [0, 0])" }),
    pixel_size_um: z
      .number()
      .min(MICROSCOPE_PIXEL_SIZE_UM.min, { error: PIXEL_SIZE_RANGE })
      .max(MICROSCOPE_PIXEL_SIZE_UM.max, { error: PIXEL_SIZE_RANGE })
      .optional()
      .meta({
        description: `Micrometres per pixel (square pixels) for the calibrated measurement columns (µm, µm²), ${MICROSCOPE_PIXEL_SIZE_UM.min} to ${MICROSCOPE_PIXEL_SIZE_UM.max} (what microscopes produce); overrides the size read from the file (the image's \`pixel_size\`). Left out: the file's, or none`,
      }),
    modality: modalityParam.optional().meta({
      description:
        'One-channel models: "auto" (default) detects fluorescence, brightfield or stained histology; the engine inverts the latter two so nuclei read bright',
    }),
    cell_expansion_um: z
      .number()
      .positive()
      .max(500)
      .optional()
      .meta({
        description: `Grows each nucleus into a cell by this many micrometres, never into another nucleus or another's cell (as QuPath's cell expansion): the \`cell\` measurement columns, and \`rois.geojson?objects=cell\`. Needs a pixel size (the file's or \`pixel_size_um\`), and may reach at most ${MAX_EXPANSION_REACH_PX} px at it (the limit: the distance over the smallest pixel size; past it 422)`,
      }),
    cell_expansion_px: z
      .number()
      .positive()
      .max(MAX_EXPANSION_REACH_PX, { error: `cell_expansion_px is at most ${MAX_EXPANSION_REACH_PX} px, the limit a cell expansion may reach` })
      .optional()
      .meta({ description: `The same cell expansion in pixels, at most ${MAX_EXPANSION_REACH_PX} (the limit); give one of the two` }),
  },
  unknownFields("the segmentation parameters"),
);

export const segmentParams = segmentParamFields
  .refine((p) => p.cell_expansion_um === undefined || p.cell_expansion_px === undefined, {
    message: "Give cell_expansion_um or cell_expansion_px, not both",
    path: ["cell_expansion_px"],
  })
  .meta({ id: "SegmentParams" });

const SEGMENT_PARAM_NAMES: readonly string[] = Object.keys(segmentParamFields.shape);

export const predictionBody = z
  .strictObject(
    {
      image_id: id,
      model_id: id,
      params: segmentParams.optional(),
    },
    unknownFields("a prediction request", (keys) => {
      const misplaced = keys.filter((k) => SEGMENT_PARAM_NAMES.includes(k));
      if (misplaced.length === 0) return "";
      const example = misplaced.map((k) => `"${k}": …`).join(", ");
      return `: segmentation parameters go under "params", as {"image_id": …, "model_id": …, "params": {${example}}}`;
    }),
  )
  .meta({ id: "PredictionRequest" });

export const trainingBody = z
  .strictObject(
    {
      model_id: id.meta({ description: "The base model to fine-tune" }),
      image_ids: z.array(id).min(1).max(500).meta({ description: "Ready images, each with a segmentation to learn from" }),
      segmentation_ids: z.array(id).min(1).max(500).optional().meta({
        description:
          "The segmentations to learn from, at most one per image of image_ids; an image not named here is learned from its most recent segmentation",
      }),
      name: z.string().min(1).max(100).optional().meta({ description: "The trained model's name" }),
      steps: z.number().int().min(1).max(1_000_000).optional().meta({ description: "Training steps; default: the runner's time budget" }),
      seed: z
        .number()
        .int()
        .min(1)
        .max(2 ** 31 - 1)
        .optional()
        .meta({
          description:
            "Seeds the split of the annotations into the regions trained on and those judged, and the training's random draws (default 1): the same annotations and seed split alike. The training's metrics name it",
        }),
    },
    unknownFields("a training request"),
  )
  .meta({ id: "TrainingRequest" });

/** The internal API's job paths. */
export const pathId = z.object({ id });

/** The public API's paths name their id as the contract does. */
export const imagePath = z.object({ image_id: id });
export const predictionPath = z.object({ prediction_id: id });
export const jobPath = z.object({ job_id: id });
export const segmentationPath = z.object({ segmentation_id: id });
export const modelPath = z.object({ model_id: id });

/**
 * Where a page of a listing starts: an opaque token from the previous page's `next_cursor`.
 * Inside it is the last item's (created_at, id); listings go newest first, id breaking ties,
 * so a page boundary never skips or repeats an item created at the same millisecond.
 */
export interface PagePosition {
  createdAt: number;
  id: string;
}

export function encodeCursor(position: PagePosition): string {
  return btoa(JSON.stringify([position.createdAt, position.id]))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

function decodeCursor(cursor: string): PagePosition | null {
  try {
    const [createdAt, id] = JSON.parse(atob(cursor.replace(/-/g, "+").replace(/_/g, "/"))) as unknown[];
    return Number.isInteger(createdAt) && typeof id === "string" && id.length > 0 ? { createdAt: createdAt as number, id } : null;
  } catch {
    return null;
  }
}

const MAX_PAGE_SIZE = 200;

const pageQuery = {
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_PAGE_SIZE)
    .default(50)
    .meta({ description: `Items per page, at most ${MAX_PAGE_SIZE}` }),
  cursor: z
    .string()
    .max(500)
    .transform((cursor, ctx) => {
      const position = decodeCursor(cursor);
      if (!position) ctx.addIssue({ code: "custom", message: "Not a cursor this service handed out; pass next_cursor from the previous page" });
      return position ?? z.NEVER;
    })
    .optional()
    .meta({ description: "`next_cursor` of the previous page; leave out for the first page" }),
};

export const imageListQuery = z.object({
  ...pageQuery,
  upload_status: z.enum(IMAGE_STATUSES).optional(),
  sha256: sha256.optional().meta({ description: "Only the images whose file has this SHA-256: is this file uploaded already?" }),
});

export const segmentationListQuery = z.object({ ...pageQuery, image_id: id.optional() });

export const predictionListQuery = z.object({ ...pageQuery, status: z.enum(JOB_STATUSES).optional(), image_id: id.optional() });

export const jobListQuery = z.object({ ...pageQuery, kind: z.enum(["prediction", "training"]).optional(), status: z.enum(JOB_STATUSES).optional() });

/** POST /segmentation (multipart): the image the annotation in part `file` belongs to. */
export const segmentationImportFields = z.object({ image_id: id });
