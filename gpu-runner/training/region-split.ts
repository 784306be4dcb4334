// Fine-tuning's evidence drawn by objects, not by whole images (issue #46): every image gives a band
// of its area to each fold's held-out part, so the evidence grows with the user's annotations
// wherever they are, one image is enough, and an image with 3 nuclei is never the whole of it.
//
// Each image is cut along its longer axis into `folds` bands holding about as many objects each
// (by the objects' centroids). Fold f holds out band f of every image and trains on what lies
// beyond a margin on either side of it: the margin is as wide as the image's widest object, so no
// object with a pixel in the held-out band has a pixel in a training region. The objects the
// margins take are judged (they lie in or across the band) or, lying wholly in a margin, used by
// neither side. Where one fold's band holds fewer than the guard's minimum, the folds rotate so
// that every object is judged once (k-fold cross-validation); where the set holds five times the
// minimum, one fold already reaches it.
import { SeededRandom } from "./random.ts";

/** A rectangle of one of the user's images. */
export interface ImageRegion {
  image: number;
  x: number;
  y: number;
  width: number;
  height: number;
}

// Exported for its test only (test/training/region-split.test.ts).
export interface SplitImage {
  width: number;
  height: number;
  /** Instance labels, row-major, 0 background. */
  labels: Uint32Array;
}

/** What the split needs of an image: its size, and each object's place along its longer axis (objectsAlong). */
export interface ImageObjects {
  width: number;
  height: number;
  extents: Extent[];
}

// Exported for its test only (test/training/region-split.test.ts).
export interface Fold {
  /** One band of each image that holds any object. */
  heldOut: ImageRegion[];
  /** What lies beyond the margins around the band. */
  training: ImageRegion[];
  /** Objects with a pixel in the held-out bands. */
  heldOutObjects: number;
}

type RegionSplit =
  | { kind: "folds"; folds: Fold[]; objects: number; rotate: boolean }
  /** The whole set is below the minimum: `missing` more objects would make it. */
  | { kind: "too_few"; objects: number; missing: number };

// Exported for its test only (test/training/region-split.test.ts).
/** Folds at most: five, each then holding a fifth of the objects (20% held out, as before). */
export const MAX_FOLDS = 5;

/** Objects a fold is planned to hold, in multiples of the minimum. */
const FOLD_SLACK = 1.5;

interface Extent {
  /** Centroid along the image's longer axis. */
  centre: number;
  /** First and last pixel along it. */
  from: number;
  to: number;
}

/** An image's objects as the split sees them, measured once (fine-tuning reads each image once to scan it, and holds only this). */
export function objectsAlong(image: SplitImage): ImageObjects {
  return { width: image.width, height: image.height, extents: extentsOf(image, image.width >= image.height) };
}

/** Each object's centroid and extent along the image's longer axis. */
function extentsOf(image: SplitImage, alongX: boolean): Extent[] {
  let count = 0;
  for (let i = 0; i < image.labels.length; i++) count = Math.max(count, image.labels[i]!);
  const sum = new Float64Array(count + 1);
  const area = new Float64Array(count + 1);
  const from = new Int32Array(count + 1).fill(0x7fffffff);
  const to = new Int32Array(count + 1).fill(-1);
  for (let y = 0; y < image.height; y++) {
    for (let x = 0; x < image.width; x++) {
      const id = image.labels[y * image.width + x]!;
      if (id === 0) continue;
      const at = alongX ? x : y;
      sum[id]! += at;
      area[id]!++;
      if (at < from[id]!) from[id] = at;
      if (at > to[id]!) to[id] = at;
    }
  }
  const extents: Extent[] = [];
  for (let id = 1; id <= count; id++) if (area[id]! > 0) extents.push({ centre: sum[id]! / area[id]!, from: from[id]!, to: to[id]! });
  return extents;
}

/**
 * Splits the images' objects into folds of held-out bands and training regions. `minObjects` is
 * the guard's minimum (gain-evidence.ts): the set is "too few" only when all its objects together
 * are fewer. `seed` orders which band goes to which fold.
 */
export function splitByRegions(images: readonly ImageObjects[], minObjects: number, seed: number): RegionSplit {
  const perImage = images.map(({ width, height, extents }) => {
    const alongX = width >= height;
    return { alongX, length: alongX ? width : height, extents };
  });
  const objects = perImage.reduce((n, p) => n + p.extents.length, 0);
  if (objects < minObjects) return { kind: "too_few", objects, missing: minObjects - objects };
  // Each fold holds half as many again as the minimum, for the bands' unevenness: 3 folds at five times the minimum.
  const folds = Math.max(2, Math.min(MAX_FOLDS, Math.floor(objects / (FOLD_SLACK * minObjects))));
  const random = new SeededRandom(seed);
  const split: Fold[] = Array.from({ length: folds }, () => ({ heldOut: [], training: [], heldOutObjects: 0 }));
  perImage.forEach(({ alongX, length, extents }, image) => {
    if (extents.length === 0) return;
    const { width, height } = images[image]!;
    const margin = Math.max(...extents.map((e) => e.to - e.from + 1)) + 1;
    // Cuts between bands at the objects' centroid quantiles, so each band holds about as many,
    // each moved to the nearest line no object crosses where there is one before the next quantile.
    const centres = extents.map((e) => e.centre).sort((a, b) => a - b);
    const crossing = new Int32Array(length + 1);
    for (const e of extents) for (let at = e.from + 1; at <= e.to; at++) crossing[at]!++;
    const quantile = (f: number) => (f <= 0 ? 0 : f >= folds ? length : Math.round(centres[Math.floor((f * centres.length) / folds)]!));
    const cuts = [0];
    for (let f = 1; f < folds; f++) {
      // Moved by at most a quarter of the way to the neighbouring quantiles, so the bands stay even.
      const [target, before, after] = [quantile(f), quantile(f - 1), quantile(f + 1)];
      const low = Math.max(cuts[f - 1]!, Math.ceil(target - (target - before) / 4));
      cuts.push(clearLine(crossing, target, low, Math.floor(target + (after - target) / 4)));
    }
    cuts.push(length);
    // Which fold each band serves, in a seeded order.
    const order = Array.from({ length: folds }, (_, f) => f);
    for (let i = folds - 1; i > 0; i--) {
      const j = random.below(i + 1);
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    const region = (from: number, to: number): ImageRegion =>
      alongX ? { image, x: from, y: 0, width: to - from, height } : { image, x: 0, y: from, width, height: to - from };
    for (let band = 0; band < folds; band++) {
      const [from, to] = [cuts[band]!, cuts[band + 1]!];
      if (to <= from) continue;
      const fold = split[order[band]!]!;
      fold.heldOut.push(region(from, to));
      fold.heldOutObjects += extents.filter((e) => e.to >= from && e.from < to).length;
      if (from - margin > 0) fold.training.push(region(0, from - margin));
      if (to + margin < length) fold.training.push(region(to + margin, length));
    }
  });
  return { kind: "folds", folds: split, objects, rotate: split.some((fold) => fold.heldOutObjects < minObjects) };
}

/** The line nearest `target` in [low, high] that no object crosses (a line at `at` lies between pixels at-1 and at), else `target`. */
function clearLine(crossing: Int32Array, target: number, low: number, high: number): number {
  for (let d = 0; target - d >= low || target + d <= high; d++) {
    if (target - d >= low && crossing[target - d] === 0) return target - d;
    if (target + d <= high && crossing[target + d] === 0) return target + d;
  }
  return target;
}
