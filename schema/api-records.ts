// What the public API (/api/v1) answers: the records the worker's views build and the OpenAPI
// document describes. Field names follow the API contract exactly; fields it does not show are
// this service's extras. `.meta({id})` names each record as a component of the OpenAPI document.
import { z } from "zod";
import { IMAGE_STATUSES, JOB_STATUSES, SEGMENTATION_SOURCES } from "./db.ts";
import { MICROSCOPE_PIXEL_SIZE_UM, PIXEL_SIZE_SOURCES } from "./image-formats/calibration.ts";
import { diameterBasis } from "./diameter-basis.ts";
import { MODALITIES, modalityDecision } from "./modality.ts";

const id = z.string();
const timestamp = z.string().meta({ format: "date-time" });
const count = z.number().int();

/** Micrometres per pixel and where they come from. */
const pixelSize = <Source extends string>(sources: readonly [Source, ...Source[]], description: string) =>
  z
    .object({
      x_um: z.number().meta({ description: "Micrometres per pixel along x" }),
      y_um: z.number().meta({ description: "Micrometres per pixel along y" }),
      source: z.enum(sources),
    })
    .nullable()
    .meta({ description });

export const imageRecord = z
  .object({
    id,
    /** A multipart upload's file name, or the `name` of a resumable one. */
    name: z.string(),
    upload_status: z.enum(IMAGE_STATUSES).meta({ description: "`ready` means the image can be segmented" }),
    upload_error: z.string().nullable().meta({ description: "Why the upload failed; set when `upload_status` is `failed`" }),
    size: count.nullable(),
    format: z.string().nullable().meta({ description: "The reader used: `tiff`, `dicom`, `png` or `jpeg`" }),
    format_name: z.string().nullable().meta({
      description:
        "The format in words: `Aperio SVS`, `Philips TIFF`, `Leica SCN`, `Ventana BIF`, `pyramidal TIFF`, `OME-TIFF`, `OME-TIFF pyramid`, `ImageJ TIFF`, `TIFF`, `DICOM whole-slide`, `PNG`, `JPEG`",
    }),
    width: count.nullable(),
    height: count.nullable(),
    channels: count.nullable(),
    bit_depth: count.nullable(),
    planes: count.nullable(),
    pixel_size: pixelSize(
      PIXEL_SIZE_SOURCES,
      `The physical pixel size read from the file: \`ome\` (OME-XML's PhysicalSizeX/Y), \`imagej\` (ImageJ's unit with the resolution tags), \`aperio\` (an Aperio SVS's \`MPP\`), \`dicom\` (a DICOM slide's \`PixelSpacing\`, in mm), \`philips\`, \`leica\`, \`ventana\` (those slides' own metadata: \`DICOM_PIXEL_SPACING\`, the SCN view over its pixels, the BIF's \`ScanRes\`), \`tiff\` (the resolution tags in inches or centimetres; the screen and print defaults 72, 96, 150 and 300 per inch, or the same per centimetre over 2.54, count as none); null when the file has none, or one not trusted: a default, or one outside the ${MICROSCOPE_PIXEL_SIZE_UM.min}-${MICROSCOPE_PIXEL_SIZE_UM.max} µm microscopes produce (\`pixel_size_warning\` says which). A prediction's \`pixel_size_um\` overrides it`,
    ),
    pixel_size_warning: z.string().nullable().meta({
      description:
        "Why the file's resolution gave no pixel size: a screen or print default, or a size no microscope produces (set aside rather than trusted); null otherwise",
    }),
    channel_names: z
      .array(z.string())
      .nullable()
      .meta({ description: "The channels' names from the file (OME-XML), which name the intensity columns; null when it names none (c0, c1, ... then)" }),
    levels: z
      .array(z.object({ width: count, height: count }))
      .nullable()
      .meta({
        description:
          "The file's pyramid, full resolution first, then its reduced levels, largest first (an image without a pyramid: its one level); a slide's thumbnail, label and macro are no levels. Null until the upload is probed",
      }),
    level_read: z
      .number()
      .int()
      .nullable()
      .meta({ description: "The index in `levels` of the level segmented, previewed and measured: the full resolution, 0" }),
    sha256: z.string().nullable().meta({
      description:
        "The file's SHA-256 (lowercase hex): computed by the service for a one-call upload, as the client declared it for a resumable one; null if neither",
    }),
    objective_magnification: z.number().nullable().meta({
      description:
        "The objective's magnification the file states (Aperio `AppMag`, OME `NominalMagnification`, DICOM `ObjectiveLensPower`); null when it states none",
    }),
    created_at: timestamp,
  })
  .meta({ id: "Image" });

const partUrls = z
  .object({
    part_size: count.meta({ description: "Bytes in each part (the last may be shorter)" }),
    part_count: count,
    urls: z.array(z.object({ part_number: count, url: z.string().meta({ description: "Signed address for this part's PUT; send no Authorization header" }) })),
  })
  .meta({ id: "UploadParts" });

/** The one-call (multipart) upload's answer. */
export const uploadedImage = z.object({ image: imageRecord }).meta({ id: "UploadedImage" });

/** The resumable (JSON) upload's answer: the record and its part plan. */
export const uploadPlan = z.object({ image: imageRecord, upload: partUrls }).meta({ id: "UploadPlan" });

/** GET /upload/{id}: the record; a pending upload also gets fresh part URLs. */
// A union with null, not .nullable(): zod-to-openapi renders a nullable reference as an allOf that
// null can never satisfy.
export const uploadState = imageRecord.extend({ upload: z.union([partUrls, z.null()]) }).meta({ id: "UploadState" });

export const uploadProcessing = z.object({ id, status: z.literal("processing") }).meta({ id: "UploadProcessing" });

const apPair = z.object({
  ap50: z.number().min(0).max(1).nullable().meta({ description: "Average precision at IoU 0.5" }),
  ap75: z.number().min(0).max(1).nullable().meta({ description: "Average precision at IoU 0.75" }),
});

/**
 * The evidence a training's guard decided on (gpu-runner/training/gain-evidence.ts): each held-out
 * image scored tile by tile by the base and by the best fine-tuned weights, and the gain's
 * bootstrap interval over the tiles. Only a "gain" returns the fine-tuned weights.
 */
const trainingEvidence = z
  .object({
    images: count.meta({ description: "Images scored (held out, or the one trained on)" }),
    objects: count.meta({ description: "True objects in them" }),
    tiles: count.meta({ description: "Tiles (a few object diameters wide) holding an object: the paired samples resampled" }),
    min_objects: count.meta({ description: "Below this many objects no gain is claimed, whatever the interval" }),
    fine_tuned_step: count.meta({ description: "The best validated fine-tuned step, the one weighed against the base" }),
    fine_tuned_ap50: z.number().min(0).max(1).meta({ description: "Its AP@0.5 (`fine_tuned.ap50` is the returned model's, the base's unless kept)" }),
    gain: z.number().min(-1).max(1).meta({ description: "Its AP@0.5 minus the base's" }),
    gain_low: z.number().min(-1).max(1).meta({ description: "The gain's interval, lower end" }),
    gain_high: z.number().min(-1).max(1).meta({ description: "The gain's interval, upper end" }),
    confidence: z.number().min(0).max(1).meta({ description: "The interval's confidence (0.95)" }),
    verdict: z.enum(["gain", "too_few_to_tell", "no_gain"]).meta({
      description:
        "`gain`: the interval lies above zero, the fine-tuned weights are returned; `too_few_to_tell`: it scored higher, but by what could be noise (the interval reaches zero, or fewer objects than `min_objects`); `no_gain`: it did not score higher, and the base weights are returned. On `too_few_to_tell` the fine-tuned weights are returned as a model marked unverified (`chosen_step` above 0) where the figures come from regions held out from training, the base weights where they come from the images trained on",
    }),
  })
  .meta({ id: "TrainingEvidence" });

/** How a training did: base and fine-tuned model scored on the same images, kept aside from training when possible. */
export const trainingMetrics = z
  .object({
    evaluated_on: z.enum(["held_out_regions", "rotated_regions", "training_image", "held_out", "none"]).meta({
      description:
        "How the scores were drawn. `held_out_regions`: a band of each image was held out from training, with a margin so that no object lies in both; `rotated_regions`: a small set's bands were held out in turn (`folds` trainings), so every object was judged once, and the model returned was trained on all of them; `training_image`: the images hold fewer objects than the guard's minimum, so the figures are on the images trained on; `held_out`: whole images held out (trainings recorded before regions); `none`: nothing was held out",
    }),
    evaluated_images: count.meta({ description: "The images the judged part came from" }),
    evaluated_regions: count.optional().meta({ description: "The regions judged (bands of the images, or whole images), pooled over the folds" }),
    folds: count.optional().meta({ description: "The folds the objects were split into (absent where the set was not split)" }),
    seed: z.number().int().positive().optional().meta({
      description: "The seed the split and the training drew from; absent from trainings recorded before it was reported",
    }),
    base: apPair.meta({ description: "The base model" }),
    fine_tuned: apPair.meta({ description: "The model returned (the base weights when fine-tuning never beat them)" }),
    chosen_step: count.meta({ description: "The training step whose weights were returned; 0 means the base weights" }),
    steps_on_all_regions: count.optional().meta({
      description:
        "`held_out_regions`: the steps the kept weights then trained on every region, the held-out bands too, so every annotated object teaches the model returned (included in `chosen_step`; the figures are those of the weights before them); absent where none",
    }),
    note: z.string().meta({ description: "What happened, in words" }),
    recipe: z.string().max(200).optional().meta({
      description:
        'How the base was fine-tuned, chosen from the images: "standard: Cellpose augmentation", or on stained histology "stained: colour input, stain variants, microscope augmentation"; absent from trainings recorded before it was reported',
    }),
    evidence: trainingEvidence.optional().meta({
      description: "What the guard weighed before keeping the fine-tuned weights; absent from trainings recorded before it was reported",
    }),
  })
  .meta({ id: "TrainingMetrics" });

/** A trained model's training summary. */
const trainingSummary = z
  .object({
    job_id: id,
    base_model_id: id,
    image_ids: z.array(id),
    segmentation_ids: z.array(id).meta({ description: "The segmentation each image was learned from, in image_ids' order" }),
    steps: count,
    seconds: z.number().nullable(),
    metrics: z.union([trainingMetrics, z.null()]),
  })
  .meta({ id: "TrainingSummary" });

export const modelRecord = z
  .object({
    id,
    name: z.string(),
    is_public: z.boolean().meta({ description: "true for shared base models, false for the organization's own" }),
    created_at: timestamp,
    description: z.string(),
    version: z.string(),
    base_model_id: z.string().nullable(),
    recommended_for: z.array(z.enum(MODALITIES)).meta({
      description:
        "The modalities this public model is the one to use for (fluorescence, brightfield, histology); clients that pick a model for an image pick by its detected modality. Empty for an organization's own models.",
    }),
    training: z.union([trainingSummary, z.null()]).meta({ description: "A trained model's training summary; null for base models" }),
  })
  .meta({ id: "Model" });

const progress = {
  progress: z.number().min(0).max(1),
  stage: z.string().nullable(),
  blocks: z
    .object({
      total: count,
      done: count.meta({ description: "Blocks segmented (or found to be glass) so far" }),
      glass: count.meta({ description: "Of those done, blocks with no signal, which skipped the network" }),
    })
    .nullable()
    .optional()
    .meta({
      description:
        "A whole slide segmented block by block: its blocks, done by any free runner. Absent or null for an image segmented in one pass, and for trainings.",
    }),
};

const jobTimes = {
  attempts: count,
  created_at: timestamp,
  started_at: timestamp.nullable(),
  finished_at: timestamp.nullable(),
};

export const predictionSubmission = z.object({ prediction_id: id, status: z.enum(["SUBMITTED", "skipped"]) }).meta({ id: "PredictionSubmission" });

export const predictionRecord = z
  .object({
    prediction_id: id,
    status: z.enum(JOB_STATUSES),
    segmentation_id: id.nullable().meta({ description: "Set once COMPLETED" }),
    cell_count: count.nullable().meta({ description: "Cells detected; set once COMPLETED" }),
    image_id: id,
    model_id: id,
    params: z.record(z.string(), z.unknown()),
    ...progress,
    reason: z.string().nullable().meta({ description: "Why it FAILED" }),
    ...jobTimes,
  })
  .meta({ id: "Prediction" });

/** The answer to POST /job/prediction and POST /job/training. */
export const jobAcknowledgement = z
  .object({
    job_id: id,
    status: z.enum(["submitted", "skipped"]),
    reason: z.string(),
    task_id: id,
    worker_job_id: id.meta({ description: "The job's identifier on the GPU runners' side (the id runners lease it by)" }),
  })
  .meta({ id: "JobAcknowledgement" });

export const jobRecord = z
  .object({
    job_id: id,
    kind: z.enum(["prediction", "training"]),
    status: z.enum(JOB_STATUSES),
    reason: z.string().nullable(),
    task_id: id,
    worker_job_id: id,
    image_id: id.nullable(),
    image_ids: z.array(id),
    model_id: id.nullable(),
    ...progress,
    segmentation_id: id.nullable(),
    cell_count: count.nullable(),
    result_model_id: id.nullable().meta({ description: "The trained model, once a training is COMPLETED" }),
    metrics: z.union([trainingMetrics, z.null()]).meta({ description: "A COMPLETED training's scores of the base and the trained model" }),
    ...jobTimes,
  })
  .meta({ id: "Job" });

const MEASUREMENT_STATES = ["measured", "measuring", "failed", "not_measured"] as const;

const measurementsState = z
  .object({
    status: z.enum(MEASUREMENT_STATES),
    detail: z.string().nullable().meta({ description: "Why it failed, or why an import was not measured; null otherwise" }),
  })
  .meta({
    id: "MeasurementsState",
    description:
      "Its per-cell intensity measurements (the `intensity` columns): `measured` (a prediction's always are), `measuring` (an import until a runner has measured it from the image's pixels: its exports have the geometry and shape columns meanwhile), `failed` (with the reason: the exports keep geometry and shape), `not_measured` (imported before imports were measured)",
  });

export const segmentationRecord = z
  .object({
    id,
    image_id: id,
    image_name: z.string(),
    source: z.enum(SEGMENTATION_SOURCES),
    model_id: id.nullable(),
    model_name: z.string().nullable(),
    model_version: z.string().nullable(),
    cell_count: count,
    confluency: z.number(),
    diameter: z.number().nullable().meta({ description: "Object diameter (px) it was segmented at: the request's or the estimate" }),
    diameter_basis: diameterBasis.nullable().meta({
      description:
        "Why it ran at that diameter: `given` (the request's), `calibration` (the model's object size in µm at the image's pixel size, e.g. \"0.499 µm/px from the file: histology objects of 5.1 µm at 10.2 px\"), `estimated` (the image states no pixel size), `model` (the model's own); null for imports and older segmentations",
    }),
    modality: modalityDecision
      .nullable()
      .meta({ description: "One-channel models: the modality the input was made for (brightfield and histology are inverted), detected or given" }),
    width: count,
    height: count,
    pixel_size: pixelSize(
      [...PIXEL_SIZE_SOURCES, "given"],
      "The pixel size its calibrated measurement columns (µm, µm²) use: the prediction's `pixel_size_um` (`given`), else the image's; null when unknown, and those columns are empty",
    ),
    timings: z.record(z.string(), z.unknown()).nullable(),
    measurements: measurementsState,
    created_at: timestamp,
  })
  .meta({ id: "Segmentation" });

/** What POST /segmentation answers. */
export const segmentationImported = z
  .object({ segmentation_id: id, image_id: id, source: z.literal("import"), cell_count: count, measurements: measurementsState })
  .meta({ id: "SegmentationImported" });

export const errorBody = z.object({ detail: z.string() }).meta({ id: "Error" });

export const validationErrorBody = z
  .object({
    detail: z.array(
      z.object({
        loc: z.array(z.union([z.string(), z.number()])),
        msg: z.string(),
        type: z.string(),
        input: z.unknown().optional(),
        ctx: z.record(z.string(), z.unknown()).optional(),
      }),
    ),
  })
  .meta({ id: "ValidationError" });

export type ImageRecord = z.infer<typeof imageRecord>;
export type ModelRecord = z.infer<typeof modelRecord>;
export type PredictionSubmission = z.infer<typeof predictionSubmission>;
export type PredictionRecord = z.infer<typeof predictionRecord>;
export type JobRecord = z.infer<typeof jobRecord>;
export type TrainingMetrics = z.infer<typeof trainingMetrics>;
export type TrainingEvidence = z.infer<typeof trainingEvidence>;
export type TrainingSummary = z.infer<typeof trainingSummary>;
export type JobAcknowledgement = z.infer<typeof jobAcknowledgement>;
export type SegmentationRecord = z.infer<typeof segmentationRecord>;
export type SegmentationImported = z.infer<typeof segmentationImported>;

/** A page of a listing: newest first; `next_cursor` is null on the last page. */
function page<Item extends z.ZodType>(item: Item, name: string) {
  return z
    .object({ items: z.array(item), next_cursor: z.string().nullable().meta({ description: "Pass as `cursor` for the next page; null on the last" }) })
    .meta({ id: name });
}

export const imagePage = page(imageRecord, "ImagePage");
export const segmentationPage = page(segmentationRecord, "SegmentationPage");
export type SegmentationPage = z.infer<typeof segmentationPage>;
export const predictionPage = page(predictionRecord, "PredictionPage");
export const jobPage = page(jobRecord, "JobPage");
