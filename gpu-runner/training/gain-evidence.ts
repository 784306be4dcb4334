// Fine-tuning's guard decides on evidence: did the fine-tuned weights segment the held-out images
// better than the base, by more than noise? A user gives a handful of images and one or two are
// held out, so the mean AP over held-out images alone cannot tell +0.006 on one image (noise) from
// +0.23 on one image of 80 nuclei (a real gain). Each held-out image is scored tile by tile
// (held-out-tiles.ts): the same tiles for both models, so the tiles are paired samples, and
// resampling them shows how much the difference would move had other objects of the same images
// been held out.
//
// The method: a paired bootstrap (Efron 1979; Efron & Tibshirani 1993, "An Introduction to the
// Bootstrap", ch. 13, percentile interval). Tiles are drawn with replacement within each image
// (stratified by image, as for several samples in Davison & Hinkley 1997, "Bootstrap Methods and their
// Application", ch. 3), each image's AP@0.5 computed from its drawn
// tiles' summed counts (AP is a ratio of sums, not a mean of tile ratios), the gain is the mean over
// images of the fine-tuned AP minus the base's, exactly the figure validation reports. Tiles of a
// few diameters rather than single objects are the resampled blocks because neighbouring objects'
// errors go together (a block bootstrap for spatial data, Hall 1985). Seeded: the same scores give
// the same interval.
//
// Why not k-fold cross-validation over the user's images: it trains k models, which the time
// budget (600 s by default) cannot pay; and with 1–3 held-out images no method can say how other
// images would differ, which this interval does not claim either (the note says how many images).
import type { ImageTiles } from "./held-out-tiles.ts";
import { SeededRandom } from "./random.ts";

/**
 * What the guard concluded: "gain" (the interval lies above zero: the fine-tuned weights are
 * returned), "too_few_to_tell" (it scored higher, but the interval reaches zero or below, or fewer
 * objects were held out than MIN_HELD_OUT_OBJECTS), "no_gain" (it did not score higher). Only a
 * gain returns the fine-tuned weights.
 */
type GainVerdict = "gain" | "too_few_to_tell" | "no_gain";

/**
 * Below this many held-out true objects no gain is claimed whatever the interval says: a
 * percentile bootstrap from a handful of tiles gives intervals that are too narrow (Hesterberg 2015,
 * "What teachers should know about the bootstrap", on small samples).
 */
export const MIN_HELD_OUT_OBJECTS = 20;

const GAIN_CONFIDENCE = 0.95;
const BOOTSTRAP_RESAMPLES = 2000;

export interface GainEvidence {
  /** Held-out images, the tiles holding an object in either model's output, and their true objects. */
  images: number;
  tiles: number;
  objects: number;
  /** Mean AP@0.5 over the images, of the base and of the fine-tuned weights, and the difference. */
  apBase: number;
  apFineTuned: number;
  gain: number;
  /** The gain's bootstrap interval at `confidence`. */
  low: number;
  high: number;
  confidence: number;
  resamples: number;
  verdict: GainVerdict;
  /** MIN_HELD_OUT_OBJECTS, so a reader of the result knows the bar without this code. */
  minObjects: number;
}

function gainVerdict(gain: number, low: number, objects: number): GainVerdict {
  if (!(gain > 0)) return "no_gain";
  if (objects < MIN_HELD_OUT_OBJECTS) return "too_few_to_tell";
  return low > 0 ? "gain" : "too_few_to_tell";
}

/** One image's tiles of both models, aligned on the tile grid (a tile empty in one model counts zero there). */
interface PairedTiles {
  base: Int32Array[]; // [tp, fp, fn] per tile
  fineTuned: Int32Array[];
  count: number;
}

function pairTiles(base: ImageTiles, fineTuned: ImageTiles): PairedTiles {
  const grid = [...new Set([...base.index, ...fineTuned.index])].sort((a, b) => a - b);
  const aligned = (tiles: ImageTiles) => {
    const at = new Map<number, number>();
    tiles.index.forEach((k, i) => at.set(k, i));
    const counts = [new Int32Array(grid.length), new Int32Array(grid.length), new Int32Array(grid.length)];
    grid.forEach((k, j) => {
      const i = at.get(k);
      if (i === undefined) return;
      counts[0]![j] = tiles.truePositives[i]!;
      counts[1]![j] = tiles.falsePositives[i]!;
      counts[2]![j] = tiles.falseNegatives[i]!;
    });
    return counts;
  };
  return { base: aligned(base), fineTuned: aligned(fineTuned), count: grid.length };
}

/** AP from summed counts; an image with nothing true or predicted scores 1 (engine/average-precision.ts). */
const apOf = (tp: number, fp: number, fn: number) => (tp + fp + fn === 0 ? 1 : tp / (tp + fp + fn));

/** The mean over images of (fine-tuned AP − base AP), each image's counts summed over `drawn` tiles (all tiles when absent). */
function meanGain(images: PairedTiles[], draw?: (image: number, count: number) => Int32Array): { base: number; fineTuned: number } {
  let base = 0;
  let fineTuned = 0;
  images.forEach((image, n) => {
    const drawn = draw ? draw(n, image.count) : undefined;
    const sums = [0, 0, 0, 0, 0, 0];
    for (let j = 0; j < image.count; j++) {
      const k = drawn ? drawn[j]! : j;
      for (let c = 0; c < 3; c++) {
        sums[c]! += image.base[c]![k]!;
        sums[3 + c]! += image.fineTuned[c]![k]!;
      }
    }
    base += apOf(sums[0]!, sums[1]!, sums[2]!);
    fineTuned += apOf(sums[3]!, sums[4]!, sums[5]!);
  });
  return { base: base / images.length, fineTuned: fineTuned / images.length };
}

/** Linear interpolation between order statistics (Hyndman & Fan 1996, type 7). */
function quantile(sorted: Float64Array, q: number): number {
  const at = q * (sorted.length - 1);
  const below = Math.floor(at);
  const above = Math.min(sorted.length - 1, below + 1);
  return sorted[below]! + (sorted[above]! - sorted[below]!) * (at - below);
}

/**
 * The evidence for a gain of the fine-tuned weights over the base on the same held-out images
 * (`base[i]` and `fineTuned[i]` are image i's tiles, scored by each model).
 */
export function gainEvidence(
  base: ImageTiles[],
  fineTuned: ImageTiles[],
  options: { seed?: number; resamples?: number; confidence?: number } = {},
): GainEvidence {
  if (base.length !== fineTuned.length || base.length === 0)
    throw new Error(`gain evidence needs the same held-out images scored by both models, got ${base.length} and ${fineTuned.length}`);
  const resamples = options.resamples ?? BOOTSTRAP_RESAMPLES;
  const confidence = options.confidence ?? GAIN_CONFIDENCE;
  const images = base.map((b, i) => pairTiles(b, fineTuned[i]!));
  const measured = meanGain(images);
  const gain = measured.fineTuned - measured.base;
  const random = new SeededRandom(options.seed ?? 1);
  const scratch = images.map((image) => new Int32Array(image.count));
  const draw = (n: number, count: number) => {
    const drawn = scratch[n]!;
    for (let j = 0; j < count; j++) drawn[j] = random.below(count);
    return drawn;
  };
  const gains = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    const resampled = meanGain(images, draw);
    gains[r] = resampled.fineTuned - resampled.base;
  }
  gains.sort();
  const low = quantile(gains, (1 - confidence) / 2);
  const high = quantile(gains, 1 - (1 - confidence) / 2);
  const objects = base.reduce((sum, image) => sum + image.objects, 0);
  return {
    images: images.length,
    tiles: images.reduce((sum, image) => sum + image.count, 0),
    objects,
    apBase: measured.base,
    apFineTuned: measured.fineTuned,
    gain,
    low,
    high,
    confidence,
    resamples,
    verdict: gainVerdict(gain, low, objects),
    minObjects: MIN_HELD_OUT_OBJECTS,
  };
}
