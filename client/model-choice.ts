// `segment --model auto` (the default): each image is segmented with the public model the service
// recommends for its modality (`recommended_for` in GET /models), the modality read from the
// file here, on a sample of windows (common/modality.ts: the same decision the runner makes), so the
// choice is known before the upload and printed with its reason.
import type { ModelRecord } from "../schema/api-records.ts";
import { fileSource, openImageRegions } from "../common/decode/region-reader.ts";
import { readModalityOfRegions } from "../common/modality.ts";
import type { Modality } from "../schema/modality.ts";

export const AUTO_MODEL = "auto";

interface ModelChoice {
  modelId: string;
  /** Why: the modality and what in the pixels decided it, or why none was read. */
  reason: string;
}

// Exported for its test only (test/client/model-choice.test.ts).
/** The public model the service lists as recommended for this modality; the first public model where none is. */
export function modelFor(modality: Modality | null, models: ModelRecord[]): string {
  const recommended = modality ? models.find((m) => m.is_public && m.recommended_for.includes(modality)) : undefined;
  return (recommended ?? models.find((m) => m.is_public && m.id === "cpsam") ?? models.find((m) => m.is_public))?.id ?? "cpsam";
}

/** The model for one image file, from its pixels. A file the client cannot read gets the default model (the service will say what is wrong with it). */
export async function chooseModelForFile(path: string, models: ModelRecord[]): Promise<ModelChoice> {
  let source: Awaited<ReturnType<typeof fileSource>> | undefined;
  try {
    source = await fileSource(path);
    const reading = await readModalityOfRegions(await openImageRegions(source));
    return { modelId: modelFor(reading.modality, models), reason: `${reading.modality}: ${reading.reason}` };
  } catch (error) {
    return { modelId: modelFor(null, models), reason: `modality not read here (${(error as Error).message})` };
  } finally {
    await source?.close();
  }
}
