// Which trainings a fine-tuning runs and what each is judged on (issue #46), from the split by
// regions (region-split.ts):
// - "held_out_regions": one fold's bands are judged, the rest of each image beyond the margins is
//   trained on; the set holds enough objects that one fold reaches the guard's minimum. Where the
//   verdict keeps the fine-tuned weights, they then train on everything, the judged bands too
//   (`thenOnEverything`), so every annotated object teaches the model returned (issue #46's title).
// - "rotated_regions": a smaller set: each fold trains and is judged in turn, so every object is
//   judged once, and a last run trains on everything; its weights are the ones returned.
// - "training_images": the whole set is below the minimum: it trains on everything and is scored
//   on the images it trained on (the guard then says how many objects are missing).
// - "none": the request asked for no held-out part.
// Images without objects are trained on whole in every run (negative examples), and judged in none.
import type { ImageObjects, ImageRegion } from "./region-split.ts";
import { splitByRegions } from "./region-split.ts";

export type EvidenceKind = "held_out_regions" | "rotated_regions" | "training_images" | "none";

interface TrainingRun {
  training: ImageRegion[];
  /** Regions scored before and after (empty: none). */
  judged: ImageRegion[];
  /** Its part of the time budget, against the other runs' (they share what is left when each starts). */
  share: number;
}

/**
 * The part of a held-out run's budget given to training its kept weights on everything afterwards.
 * The bands are a fifth of the area, so a quarter of the steps the judged run took lets them be
 * drawn about as often as the rest was; it is not chosen on any figures.
 */
const ON_EVERYTHING_SHARE = 0.2;

export interface RunPlan {
  kind: EvidenceKind;
  runs: TrainingRun[];
  /** Trained after the verdict, from the judged run's kept weights, where the verdict keeps them (held_out_regions). */
  thenOnEverything?: TrainingRun;
  /** Objects in the set, and (training_images) how many more would reach the minimum. */
  objects: number;
  missing: number;
  /** The folds the objects were split into (0 where the set was not split). */
  folds: number;
}

const whole = (image: ImageObjects, index: number): ImageRegion => ({ image: index, x: 0, y: 0, width: image.width, height: image.height });

export function planRuns(images: readonly ImageObjects[], holdOut: boolean, minObjects: number, seed: number): RunPlan {
  const all = images.map(whole);
  const objects = images.reduce((n, image) => n + image.extents.length, 0);
  if (!holdOut) return { kind: "none", runs: [{ training: all, judged: [], share: 1 }], objects, missing: 0, folds: 0 };
  const split = splitByRegions(images, minObjects, seed);
  if (split.kind === "too_few") {
    const withObjects = all.filter((region) => images[region.image]!.extents.length > 0);
    return { kind: "training_images", runs: [{ training: all, judged: withObjects, share: 1 }], objects, missing: split.missing, folds: 0 };
  }
  const empty = all.filter((region) => images[region.image]!.extents.length === 0);
  const folds = split.folds.map((fold) => ({ training: [...fold.training, ...empty].sort(byImage), judged: fold.heldOut, share: 1 }));
  if (!split.rotate) {
    const judged = { ...folds[0]!, share: 1 - ON_EVERYTHING_SHARE };
    const thenOnEverything = { training: all, judged: [], share: ON_EVERYTHING_SHARE };
    return { kind: "held_out_regions", runs: [judged], thenOnEverything, objects, missing: 0, folds: split.folds.length };
  }
  return { kind: "rotated_regions", runs: [...folds, { training: all, judged: [], share: 1 }], objects, missing: 0, folds: split.folds.length };
}

const byImage = (a: ImageRegion, b: ImageRegion) => a.image - b.image || a.x - b.x || a.y - b.y;

/** The objects with a pixel in a region (by their place along the image's longer axis, as the split cut it). */
export function objectsIn(image: ImageObjects, region: ImageRegion): number {
  const alongX = image.width >= image.height;
  const [from, to] = alongX ? [region.x, region.x + region.width] : [region.y, region.y + region.height];
  return image.extents.filter((e) => e.to >= from && e.from < to).length;
}
