// Request bodies of the runner's API (/api/v1/internal), shared by the worker and the GPU runner.
import { z } from "zod";
import { diameterBasis } from "./diameter-basis.ts";
import { segmentParams } from "./api.ts";
import { trainingMetrics } from "./api-records.ts";
import { JOB_FAULTS } from "./db.ts";
import { modalityDecision } from "./modality.ts";

export const leaseBody = z.object({
  runner_id: z.string().min(1).max(200),
  /** Long poll: wait up to this long for a job before answering 204. */
  wait_seconds: z.number().min(0).max(20).default(0),
  lease_seconds: z.number().int().min(10).max(3600).optional(),
});

const leaseToken = z.string().min(1);

export const heartbeatBody = z.object({
  lease_token: leaseToken,
  /** How long the renewed lease lasts; default: the worker's LEASE_SECONDS. */
  lease_seconds: z.number().int().min(10).max(3600).optional(),
  progress: z.number().min(0).max(1).optional(),
  stage: z.string().min(1).max(50).optional(),
});

export const urlsBody = z.object({ lease_token: leaseToken });

/** Hands back a job the runner leased but never started (it was shutting down): no attempt spent. */
export const releaseBody = z.object({ lease_token: leaseToken });

const predictionResult = z.object({
  roi_count: z.number().int().min(0),
  confluency: z.number().min(0).max(1),
  width: z.number().int().min(1),
  height: z.number().int().min(1),
  /** Object diameter (px) the image was segmented at: the job's, or the engine's estimate. */
  diameter: z.number().positive().optional(),
  /** One-channel models: the modality the input was made for, detected or given. */
  modality: modalityDecision.optional(),
  /** Which diameter it ran at and why (absent from older runners). */
  diameter_basis: diameterBasis.optional(),
  timings: z.record(z.string(), z.number()).optional(),
});

/**
 * What every block of a block-wise prediction shares (engine/blocks/segment-blocks.ts BlockPlan):
 * the survey's normalisation, modality and diameter, and the grid's core side and margin, from
 * which each block's rectangles are computed again (engine/blocks/block-grid.ts) rather than sent.
 */
const blockPlan = z.object({
  width: z.number().int().min(1),
  height: z.number().int().min(1),
  core_side: z.number().int().min(1),
  margin: z.number().int().min(0),
  rows: z.number().int().min(1),
  columns: z.number().int().min(1),
  /** The diameter (px) blocks run at. */
  diameter: z.number().positive(),
  survey: z.object({
    normalization: z.object({ low: z.array(z.number()), high: z.array(z.number()) }),
    /** The request's or the estimate's diameter; absent: the model's own (no rescaling). */
    diameter: z.number().positive().optional(),
    modality: modalityDecision.optional(),
    diameter_estimate: z.record(z.string(), z.number().optional()).optional(),
    diameter_basis: diameterBasis.optional(),
  }),
  /**
   * How the image is shown, fixed once from the survey's sample windows: per shown channel (at most
   * three) the values its 8-bit stretch maps to 0 and 255. The blocks' full-resolution tiles and the
   * merge's preview pyramid use it, so zooming across levels keeps the contrast. Absent from older
   * runners' plans: then no block writes full-resolution tiles.
   */
  display: z
    .array(z.object({ low: z.number(), high: z.number() }))
    .min(1)
    .max(3)
    .optional(),
});
export type BlockPlan = z.infer<typeof blockPlan>;

/** Most blocks one prediction may be cut into (a runner refuses a plan past it as the input's fault). */
export const MAX_BLOCKS_PER_PREDICTION = 10_000;

/** The first attempt of a block-wise prediction on a file read at random ends with its plan: its blocks become block tasks. */
const blockPlanResult = z.object({
  block_plan: blockPlan.refine((plan) => plan.rows * plan.columns <= MAX_BLOCKS_PER_PREDICTION, {
    message: `a prediction has at most ${MAX_BLOCKS_PER_PREDICTION} blocks`,
  }),
  timings: z.record(z.string(), z.number()).optional(),
});

/** A block task's: what it kept (its cells went to its signed URL), and whether it was glass. */
const blockResult = z.object({
  block_cells: z.number().int().min(0),
  kept_area: z.number().min(0),
  glass: z.boolean(),
  timings: z.record(z.string(), z.number()).optional(),
  /** Where its network ran (absent for glass). */
  execution_provider: z.string().optional(),
});

const trainingResult = z.object({
  steps: z.number().int().min(0),
  seconds: z.number().min(0).optional(),
  metrics: trainingMetrics.optional(),
  timings: z.record(z.string(), z.number()).optional(),
});

/** A preview job's: the tile archive's size (its bytes went to the job's signed URL), and the modality its pixels show (the dashboard picks a model by it). */
const previewResult = z.object({
  preview_bytes: z.number().int().min(1),
  levels: z.number().int().min(1),
  modality: modalityDecision.optional(),
});

/** A measurement job's: the ROIs it measured and the channels it measured them in (the artifact went to the job's signed URL). */
const measurementResult = z.object({
  measured_rois: z.number().int().min(0),
  channels: z.number().int().min(1),
});

export const completeBody = z.object({
  lease_token: leaseToken,
  result: z.union([predictionResult, trainingResult, previewResult, measurementResult, blockPlanResult, blockResult]),
});

export const failBody = z.object({
  lease_token: leaseToken,
  reason: z.string().min(1).max(2000),
  /**
   * Whose fault the failure is (schema/db.ts JOB_FAULTS); the worker decides from it whether the
   * job gets another attempt. Runners that predate it send only `retryable`.
   */
  fault: z.enum(JOB_FAULTS).optional(),
  /** Older runners: true for transient trouble, false for the job's own fault. Ignored when `fault` is given. */
  retryable: z.boolean().default(false),
});

export type PredictionResult = z.infer<typeof predictionResult>;
export type TrainingResult = z.infer<typeof trainingResult>;
export type PreviewResult = z.infer<typeof previewResult>;
export type MeasurementResult = z.infer<typeof measurementResult>;
export type BlockPlanResult = z.infer<typeof blockPlanResult>;
export type BlockResult = z.infer<typeof blockResult>;

/** What POST /jobs/lease (and /jobs/{id}/urls) answers: a job with signed URLs for its data. */
const signedImage = z.object({
  id: z.string(),
  name: z.string(),
  format: z.string().nullable(),
  width: z.number().nullable(),
  height: z.number().nullable(),
  channels: z.number().nullable(),
  /** The channels' names from the file (OME-XML), which the ROI artifact records for the intensity columns; absent from older workers. */
  channel_names: z.array(z.string()).nullable().optional(),
  /** Micrometres per pixel read from the file (a cell expansion in µm needs it, unless the job's pixel_size_um overrides it). */
  pixel_size_um: z.object({ x: z.number(), y: z.number() }).nullable().optional(),
  url: z.string(),
});

const modelFiles = z.object({ onnx: z.string(), manifest: z.string() });

const leaseCommon = {
  job_id: z.string(),
  attempt: z.number(),
  lease_token: z.string(),
  lease_expires_at: z.number(),
  /**
   * The job's time limit, counted from its first start across every attempt (schema/work-limits.ts),
   * and what was left of it when this lease was granted: the runner stops the job by then, and the
   * worker fails it (heartbeats past it are refused; it is never leased again).
   */
  time_limit: z.object({ seconds: z.number(), left_seconds: z.number() }).optional(),
};

/** The model a prediction or training runs (a preview job runs none). */
const leasedModel = z.object({ id: z.string(), name: z.string(), version: z.string(), files: modelFiles });

/** The request's parameters as the API validated them (see leasedPrediction). */
const leasedParams = z
  .object({
    ...segmentParams.shape,
    diameter: z.union([z.number().min(0), z.literal("auto"), z.null()]).optional(),
    cell_expansion_px: z.number().positive().optional(),
  })
  .default({});

// Exported for its test only (test/runner/config-and-retry.test.ts).
export const leasedPrediction = z.object({
  ...leaseCommon,
  kind: z.literal("prediction"),
  model: leasedModel,
  /**
   * The request's parameters as the API validated them. Unknown keys are dropped rather than
   * refused, so a runner a release behind still runs a job that names a newer parameter. The work
   * limits (schema/work-limits.ts) are not part of the shape: a job queued before a limit was
   * lowered must still parse, so that the runner fails it with the reason instead of never leasing it.
   */
  params: leasedParams,
  image: signedImage,
  /**
   * preview_url: where the image's preview tile archive goes (schema/preview-tiles.ts), sent only
   * while the image has none.
   */
  output: z.object({ segmentation_id: z.string(), artifact_url: z.string(), preview_url: z.string().optional() }),
  /**
   * Present once every block task of a block-wise prediction is done: this attempt merges their
   * parts (in grid order) into the artifact and the preview instead of segmenting.
   */
  merge: z
    .object({
      plan: blockPlan,
      parts: z.array(z.object({ cells_url: z.string(), preview_url: z.string().optional() })),
      /**
       * Where the image's full-resolution manifest goes (schema/preview-tiles.ts
       * fullResolutionManifest), sent only when every block wrote its tile pack and the image has
       * no manifest yet.
       */
      full_manifest_url: z.string().optional(),
      kept_area: z.number().min(0),
      glass_blocks: z.number().int().min(0),
      /** Milliseconds per stage, summed over the blocks. */
      timings: z.record(z.string(), z.number()),
      /** Where the blocks' networks ran. */
      execution_providers: z.array(z.string()),
    })
    .optional(),
});

/**
 * One block of a block-wise prediction (engine/blocks/): read its rectangle by range requests,
 * segment it with the plan's survey, and write the cells its core keeps (and, while the image has
 * no preview, its core's share of one) for the prediction's merge. full_url: where its core's
 * full-resolution tile pack goes (engine/preview.ts fullResolutionTiles, stretched by the plan's
 * display), sent only while the image has no full-resolution level and the plan has a display.
 */
const leasedBlock = z.object({
  ...leaseCommon,
  kind: z.literal("block"),
  prediction_id: z.string(),
  model: leasedModel,
  params: leasedParams,
  image: signedImage,
  plan: blockPlan,
  block: z.object({ index: z.number().int().min(0), total: z.number().int().min(1) }),
  output: z.object({ cells_url: z.string(), preview_url: z.string().optional(), full_url: z.string().optional() }),
});

/** The dashboard's preview of an image, made once: decode it and store its tile archive. */
const leasedPreview = z.object({
  ...leaseCommon,
  kind: z.literal("preview"),
  image: signedImage,
  output: z.object({ preview_url: z.string() }),
});

/**
 * An imported segmentation to measure: its ROIs' intensities per channel from the image's original
 * pixels, written as a new artifact (the same ROIs, in the same order, with intensities) to
 * output.artifact_url.
 */
const leasedMeasurement = z.object({
  ...leaseCommon,
  kind: z.literal("measurement"),
  image: signedImage,
  rois: z.object({ segmentation_id: z.string(), artifact_url: z.string() }),
  output: z.object({ artifact_url: z.string() }),
});

const leasedTraining = z.object({
  ...leaseCommon,
  kind: z.literal("training"),
  model: leasedModel,
  training: z.object({
    examples: z.array(z.object({ image: signedImage, labels: z.object({ segmentation_id: z.string(), artifact_url: z.string() }) })),
    steps: z.number().nullable(),
    /** The organization's plan bound on training time: the runner stops training by then, the worker fails the job past it. */
    max_seconds: z.number().positive().optional(),
    /** The request's seed; absent: the runner's default. */
    seed: z.number().int().positive().optional(),
  }),
  output: z.object({ model_id: z.string(), files: modelFiles }),
});

export const leasedJob = z.discriminatedUnion("kind", [leasedPrediction, leasedTraining, leasedPreview, leasedMeasurement, leasedBlock]);
export type LeasedJob = z.infer<typeof leasedJob>;
export type LeasedPrediction = z.infer<typeof leasedPrediction>;
export type LeasedTraining = z.infer<typeof leasedTraining>;
export type LeasedPreview = z.infer<typeof leasedPreview>;
export type LeasedMeasurement = z.infer<typeof leasedMeasurement>;
export type LeasedBlock = z.infer<typeof leasedBlock>;
