// Which training image each crop comes from. Cellpose draws every training image equally often;
// the project's default gives every data set the same share instead, so a small set (Kromp) is
// not drowned by a large one (BBBC039).
import { setOfImage } from "./labelled-images.ts";
import type { ImageSampling } from "./training-config.ts";

/** Cumulative probabilities, one per image id, of drawing that image or one before it. */
export function cumulativeSamplingWeights(ids: string[], sampling: ImageSampling): Float64Array {
  const imagesPerSet = new Map<string, number>();
  for (const id of ids) imagesPerSet.set(setOfImage(id), (imagesPerSet.get(setOfImage(id)) ?? 0) + 1);
  const cumulative = new Float64Array(ids.length);
  let total = 0;
  for (let i = 0; i < ids.length; i++) {
    total += sampling === "per-image" ? 1 : 1 / imagesPerSet.get(setOfImage(ids[i]))!;
    cumulative[i] = total;
  }
  for (let i = 0; i < ids.length; i++) cumulative[i] /= total;
  return cumulative;
}

/** The index drawn by a uniform number u in [0, 1). */
export function drawIndex(cumulative: Float64Array, u: number): number {
  let i = 0;
  while (i < cumulative.length - 1 && cumulative[i] <= u) i++;
  return i;
}
