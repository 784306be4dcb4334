// Which training image each crop comes from. Cellpose draws every training image equally often;
// the project's default gives every data set the same share instead, so a small set (Kromp) is
// not drowned by a large one (BBBC039); "sqrt" sits between the two (shares in proportion to the
// square root of a set's image count, as multilingual language models temper their corpora), so a
// set of 13 images gets a fair share without being drawn as often as one of 400.
import { setOfImage } from "./labelled-images.ts";
import type { ImageSampling } from "./training-config.ts";

/** Cumulative probabilities, one per image id, of drawing that image or one before it. */
export function cumulativeSamplingWeights(ids: string[], sampling: ImageSampling): Float64Array {
  const imagesPerSet = new Map<string, number>();
  for (const id of ids) imagesPerSet.set(setOfImage(id), (imagesPerSet.get(setOfImage(id)) ?? 0) + 1);
  const cumulative = new Float64Array(ids.length);
  let total = 0;
  for (const [i, id] of ids.entries()) {
    const inSet = imagesPerSet.get(setOfImage(id))!;
    total += sampling === "per-image" ? 1 : sampling === "sqrt" ? 1 / Math.sqrt(inSet) : 1 / inSet;
    cumulative[i] = total;
  }
  for (const [i, c] of cumulative.entries()) cumulative[i] = c / total;
  return cumulative;
}

/** The index drawn by a uniform number u in [0, 1). */
export function drawIndex(cumulative: Float64Array, u: number): number {
  let i = 0;
  while (i < cumulative.length - 1 && cumulative[i]! <= u) i++;
  return i;
}
