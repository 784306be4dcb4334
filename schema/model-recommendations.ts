// Which public model to use for which images: the one place that says it. GET /models shows each
// public model's modalities (`recommended_for`), and every client that picks a model for an image
// (the dashboard's predict form, `npm run client -- segment --model auto`, `npm run segment`)
// picks by the image's detected modality from here. Chosen on the models' AP@0.5 per modality on
// held-out images that chose nothing (docs/models.md):
// - stained histology: cpsam-histology, the best on both collections, TNBC slides it never trained
//   on 0.706 (cpsam 0.419, cpsam-large 0.453) and DSB2018's stained images 0.632 (0.589, 0.621),
//   at 1.2x cpsam's network time, about a quarter of cpsam-large's;
// - brightfield: cpsam-large, 0.835 (cpsam 0.755);
// - fluorescence: cpsam, as good or better (BBBC039 0.893, Kromp 0.955, DSB2018 0.834) at a
//   quarter of cpsam-large's time.
import type { Modality } from "./modality.ts";

// Exported for its test only (test/engine/model-recommendations.test.ts).
export const RECOMMENDED_MODALITIES: Readonly<Record<string, readonly Modality[]>> = {
  cpsam: ["fluorescence"],
  "cpsam-large": ["brightfield"],
  "cpsam-histology": ["histology"],
};

/** The public model for images of this modality; cpsam, the default, where none is named or the modality is unknown. */
export function recommendedModel(modality: Modality | null | undefined): string {
  if (!modality) return "cpsam";
  return Object.entries(RECOMMENDED_MODALITIES).find(([, modalities]) => modalities.includes(modality))?.[0] ?? "cpsam";
}

/** The modalities a model is recommended for: a public model's, none for an organization's own. */
export function recommendedFor(modelId: string, isPublic: boolean): Modality[] {
  return isPublic ? [...(RECOMMENDED_MODALITIES[modelId] ?? [])] : [];
}

/** The base a fine-tuning starts from where the user names none, and why, in words. */
interface TrainingBaseChoice {
  modelId: string;
  reason: string;
}

/**
 * The public model recommended for the training images' modality (the one most of them share, by
 * the segmentations the service made of them); cpsam where no image's modality is known.
 */
export function trainingBase(modalities: readonly (Modality | null)[]): TrainingBaseChoice {
  const counts = new Map<Modality, number>();
  for (const modality of modalities) if (modality) counts.set(modality, (counts.get(modality) ?? 0) + 1);
  const [modality, count] = [...counts].sort((a, b) => b[1] - a[1])[0] ?? [null, 0];
  const images = (n: number) => `${n} image${n === 1 ? "" : "s"}`;
  if (!modality) {
    return {
      modelId: recommendedModel(null),
      reason: `the default: no image's modality is known yet (the service reads it when it segments an image; imported segmentations do not say)`,
    };
  }
  const modelId = recommendedModel(modality);
  const where = modalities.length === 1 ? "the image" : `${count} of the ${images(modalities.length)}`;
  return { modelId, reason: `recommended for ${modality}, the modality the service read in ${where}` };
}
