// The mask parameters a prediction takes when its request leaves them out: the model manifest's
// `maskDefaults` for the input's modality, else Cellpose's. The engine segments with them and the
// dashboard's prediction form shows them, so the two cannot disagree.
import type { Modality } from "./modality.ts";

export interface MaskDefaults {
  cellprobThreshold: number;
  flowThreshold: number;
  minSize: number;
}

/** Cellpose's defaults. */
export const CELLPOSE_MASK_DEFAULTS: MaskDefaults = { cellprobThreshold: 0, flowThreshold: 0.4, minSize: 15 };

/** A manifest's `maskDefaults` (each modality's entry may set some of the three). */
export type ModelMaskDefaults = Partial<Record<Modality, Partial<MaskDefaults>>>;

export function effectiveMaskDefaults(model: ModelMaskDefaults | undefined, modality: Modality): MaskDefaults {
  return { ...CELLPOSE_MASK_DEFAULTS, ...model?.[modality] };
}
