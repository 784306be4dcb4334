// The microscopy modalities the engine makes a nuclei model's input for (gpu-runner/engine/modality.ts),
// shared by the API's prediction parameters, the runner's result and the segmentation record.
import { z } from "zod";

export const MODALITIES = ["fluorescence", "brightfield", "histology"] as const;
export type Modality = (typeof MODALITIES)[number];

/** A prediction's `modality` parameter: one of the modalities, or "auto" (the default) to detect it. */
export const modalityParam = z.enum(["auto", ...MODALITIES]);

/** What a segmentation records: the modality its input was made for, whether it was detected or given, and for a detected one what in the pixels decided it. */
export const modalityDecision = z.object({
  modality: z.enum(MODALITIES),
  source: z.enum(["detected", "given"]),
  reason: z.string().max(300).optional(),
});
export type ModalityDecision = z.infer<typeof modalityDecision>;
