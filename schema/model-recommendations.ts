// Which public model to use for which images: the one place that says it. GET /models shows each
// public model's modalities (`recommended_for`), and every client that picks a model for an image
// (the dashboard's predict form, `npm run client -- segment --model auto`, `npm run segment`)
// picks by the image's detected modality from here. Chosen on the models' figures per modality on
// images that chose nothing (docs/models.md): cpsam-large is better on stained histology and
// brightfield, cpsam as good on fluorescence at a quarter of the time.
import type { Modality } from "./modality.ts";

export const RECOMMENDED_MODALITIES: Readonly<Record<string, readonly Modality[]>> = {
  cpsam: ["fluorescence"],
  "cpsam-large": ["histology", "brightfield"],
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
