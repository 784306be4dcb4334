// Request bodies of the public API (/api/v1). Responses are built by the worker's views.
import { z } from "zod";
import { modalityParam } from "./modality.ts";

const id = z.string().min(1).max(100);

export const resumableUploadBody = z.object({
  name: z.string().min(1).max(255),
  size: z.number().int().min(1),
});

/** Cellpose's parameters; anything left out takes the model's or Cellpose's default. */
export const segmentParams = z
  .object({
    diameter: z.number().positive().max(1000).optional(),
    cellprob_threshold: z.number().min(-20).max(20).optional(),
    flow_threshold: z.number().min(0).max(10).optional(),
    min_size: z.number().int().min(0).optional(),
    niter: z.number().int().min(1).max(10000).optional(),
    // Cellpose's convention: [channel to segment, nuclear channel], 1-based, 0 = grayscale (the mean
    // of all channels, the default). One-channel models such as cpsam read the first entry only.
    channels: z.array(z.number().int().min(0).max(64)).min(1).max(2).optional(),
    // What kind of image this is, for one-channel models: "auto" (the default) detects it; the
    // engine inverts brightfield and reads the haematoxylin of stained histology.
    modality: modalityParam.optional(),
  })
  .strict();

export const predictionBody = z.object({
  image_id: id,
  model_id: id,
  params: segmentParams.optional(),
});

export const trainingBody = z.object({
  model_id: id,
  image_ids: z.array(id).min(1).max(500),
  name: z.string().min(1).max(100).optional(),
  steps: z.number().int().min(1).max(1_000_000).optional(),
});

export const pathId = z.object({ id });

/** POST /segmentation (multipart): the image the annotation in part `file` belongs to. */
export const segmentationImportFields = z.object({ image_id: id });
