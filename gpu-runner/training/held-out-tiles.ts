// One held-out image scored as many small samples: the image is cut into square tiles a few object
// diameters wide, the objects matched once over the whole image (AP@0.5, Cellpose's matching,
// engine/average-precision.ts), and each object's outcome counted in the tile holding its
// centroid: a matched true object is a true positive, an unmatched one a false negative, an
// unmatched prediction a false positive. The tiles' counts add up to the image's own, so its
// AP@0.5 is the same figure validation reports, and fine-tuning's guard (gain-evidence.ts) can
// resample the tiles to see how much of a difference between two models is noise.
import { matchObjects } from "../../common/scoring/average-precision.ts";

/**
 * Tile side in object diameters. Big enough that an object's split or merge, which spans one or
 * two diameters, mostly stays in one tile with its neighbours; small enough that a 512² crop of
 * ~80 nuclei still gives some 40 tiles, so one held-out image is many samples.
 */
export const TILE_DIAMETERS = 4;

/** One image's tiles, those holding any object (true or predicted), in raster order of the tile grid. */
export interface ImageTiles {
  /** The tile grid's index of each tile kept: pairs one model's tiles with another's on the same image. */
  index: Int32Array;
  truePositives: Int32Array;
  falsePositives: Int32Array;
  falseNegatives: Int32Array;
  /** True objects in the image. */
  objects: number;
}

/** Square tiles of `tileSize` px over a `width`-wide label image; counts at IoU 0.5. */
export function heldOutTiles(truth: Uint32Array, predicted: Uint32Array, width: number, tileSize: number): ImageTiles {
  const height = truth.length / width;
  const side = Math.max(1, Math.round(tileSize));
  const columns = Math.ceil(width / side);
  const tileCount = columns * Math.ceil(height / side);
  const matching = matchObjects(truth, predicted, 0.5);
  const tileOf = (labels: Uint32Array, count: number) => {
    const sumX = new Float64Array(count + 1);
    const sumY = new Float64Array(count + 1);
    const area = new Float64Array(count + 1);
    for (let i = 0; i < labels.length; i++) {
      const id = labels[i]!;
      if (id === 0) continue;
      sumX[id]! += i % width;
      sumY[id]! += Math.floor(i / width);
      area[id]!++;
    }
    const tiles = new Int32Array(count + 1);
    for (let id = 1; id <= count; id++) {
      const x = Math.floor(sumX[id]! / area[id]!);
      const y = Math.floor(sumY[id]! / area[id]!);
      tiles[id] = Math.floor(y / side) * columns + Math.floor(x / side);
    }
    return tiles;
  };
  const truthTile = tileOf(matching.truth, matching.trueCount);
  const predictedTile = tileOf(matching.predicted, matching.predictedCount);
  const tp = new Int32Array(tileCount);
  const fp = new Int32Array(tileCount);
  const fn = new Int32Array(tileCount);
  const matchedPrediction = new Uint8Array(matching.predictedCount + 1);
  for (let id = 1; id <= matching.trueCount; id++) {
    const partner = matching.partnerOfTruth[id]!;
    if (partner) {
      tp[truthTile[id]!]!++;
      matchedPrediction[partner] = 1;
    } else fn[truthTile[id]!]!++;
  }
  for (let id = 1; id <= matching.predictedCount; id++) if (!matchedPrediction[id]) fp[predictedTile[id]!]!++;
  const kept: number[] = [];
  for (let k = 0; k < tileCount; k++) if (tp[k]! + fp[k]! + fn[k]! > 0) kept.push(k);
  const pick = (counts: Int32Array) => Int32Array.from(kept, (k) => counts[k]!);
  return { index: Int32Array.from(kept), truePositives: pick(tp), falsePositives: pick(fp), falseNegatives: pick(fn), objects: matching.trueCount };
}
