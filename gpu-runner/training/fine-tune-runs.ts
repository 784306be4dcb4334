// Which trainings a fine-tuning runs and what each is judged on (issue #46), from the split by
// regions (region-split.ts):
// - "held_out_regions": one fold's bands are judged, the rest of each image beyond the margins is
//   trained on; the set holds enough objects that one fold reaches the guard's minimum.
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
}

export interface RunPlan {
  kind: EvidenceKind;
  runs: TrainingRun[];
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
  if (!holdOut) return { kind: "none", runs: [{ training: all, judged: [] }], objects, missing: 0, folds: 0 };
  const split = splitByRegions(images, minObjects, seed);
  if (split.kind === "too_few") {
    const withObjects = all.filter((region) => images[region.image]!.extents.length > 0);
    return { kind: "training_images", runs: [{ training: all, judged: withObjects }], objects, missing: split.missing, folds: 0 };
  }
  const empty = all.filter((region) => images[region.image]!.extents.length === 0);
  const folds = split.folds.map((fold) => ({ training: [...fold.training, ...empty].sort(byImage), judged: fold.heldOut }));
  if (!split.rotate) return { kind: "held_out_regions", runs: [folds[0]!], objects, missing: 0, folds: split.folds.length };
  return { kind: "rotated_regions", runs: [...folds, { training: all, judged: [] }], objects, missing: 0, folds: split.folds.length };
}

const byImage = (a: ImageRegion, b: ImageRegion) => a.image - b.image || a.x - b.x || a.y - b.y;

/** The objects with a pixel in a region (by their place along the image's longer axis, as the split cut it). */
export function objectsIn(image: ImageObjects, region: ImageRegion): number {
  const alongX = image.width >= image.height;
  const [from, to] = alongX ? [region.x, region.x + region.width] : [region.y, region.y + region.height];
  return image.extents.filter((e) => e.to >= from && e.from < to).length;
}
