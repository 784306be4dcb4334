// Request bodies of the public API (/api/v1). Responses are built by the worker's views.
import { z } from "zod";

const id = z.string().min(1).max(100);

export const resumableUploadBody = z.object({
  name: z.string().min(1).max(255),
  size: z.number().int().min(1),
});

/**
 * Object diameter in pixels. Cellpose's convention: 0 means "estimate it from the image"; null,
 * "auto" and leaving it out mean the same. `requestedDiameter` is the one reading of it.
 */
export const diameter = z.union([z.number().min(0).max(1000), z.literal("auto"), z.null()]);

export function requestedDiameter(value: unknown): number | undefined {
  return typeof value === "number" && value > 0 ? value : undefined;
}

/** Cellpose's parameters; anything left out takes the model's or Cellpose's default. */
export const segmentParams = z
  .object({
    diameter: diameter.optional(),
    cellprob_threshold: z.number().min(-20).max(20).optional(),
    flow_threshold: z.number().min(0).max(10).optional(),
    min_size: z.number().int().min(0).optional(),
    niter: z.number().int().min(1).max(10000).optional(),
    // Cellpose's convention: [channel to segment, nuclear channel], 1-based, 0 = grayscale (the mean
    // of all channels, the default). One-channel models such as cpsam read the first entry only.
    channels: z.array(z.number().int().min(0).max(64)).min(1).max(2).optional(),
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
