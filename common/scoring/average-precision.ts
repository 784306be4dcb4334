// Average precision as Cellpose's metrics.average_precision defines it (Stringer et al. 2021):
// at each IoU threshold, true and predicted objects are matched one-to-one by an optimal
// assignment (cost = -[IoU >= th] - IoU / (2 n_min)), a match counts when IoU >= th, and
// AP = TP / (TP + FP + FN). One deliberate difference: an image with no objects in either label
// image scores AP = 1 (Cellpose divides 0 by 0), so dataset means stay finite.
import { renumberInRasterOrder } from "../geometry/label-image.ts";
import { minimumCostAssignment } from "./assignment.ts";

interface AveragePrecision {
  ap: number[];
  tp: number[];
  fp: number[];
  fn: number[];
}

export function averagePrecision(truth: Uint32Array, predicted: Uint32Array, thresholds: number[] = [0.5, 0.75, 0.9]): AveragePrecision {
  if (truth.length !== predicted.length) throw new Error(`label images differ in size: ${truth.length} vs ${predicted.length} pixels`);
  // Renumbered 1..n, so that sparse or huge ids cost nothing.
  const t = truth.slice();
  const p = predicted.slice();
  const counts = new OverlapCounts(renumberInRasterOrder(t), renumberInRasterOrder(p));
  counts.addRow(t, p);
  return counts.averagePrecision(thresholds);
}

/**
 * The pixel counts average precision needs, gathered a row at a time so that two label images
 * never have to be held whole (a segmentation and an annotation rendered row by row, roi-raster.ts):
 * each object's area and each overlapping pair's intersection. Labels are any ids up to the
 * largest given; objects are those with at least one pixel.
 */
export class OverlapCounts {
  readonly #areaTrue: Float64Array;
  readonly #areaPredicted: Float64Array;
  /** truth × (largest predicted + 1) + predicted → pixels in both. */
  readonly #intersections = new Map<number, number>();
  readonly #stride: number;

  constructor(largestTrue: number, largestPredicted: number) {
    this.#areaTrue = new Float64Array(largestTrue + 1);
    this.#areaPredicted = new Float64Array(largestPredicted + 1);
    this.#stride = largestPredicted + 1;
  }

  /** Adds one row (or any run of pixels) of both label images, pixel for pixel. */
  addRow(truth: Uint32Array, predicted: Uint32Array): void {
    if (truth.length !== predicted.length) throw new Error(`rows differ in length: ${truth.length} vs ${predicted.length}`);
    const areaTrue = this.#areaTrue;
    const areaPredicted = this.#areaPredicted;
    for (let i = 0; i < truth.length; ) {
      const a = truth[i]!;
      const b = predicted[i]!;
      if (a >= areaTrue.length || b >= areaPredicted.length) throw new Error(`label ${Math.max(a, b)} is above the largest given`);
      // A run of one pair is counted once: objects span many pixels of a row.
      let end = i + 1;
      while (end < truth.length && truth[end] === a && predicted[end] === b) end++;
      const run = end - i;
      areaTrue[a]! += run;
      areaPredicted[b]! += run;
      if (a !== 0 && b !== 0) {
        const key = a * this.#stride + b;
        this.#intersections.set(key, (this.#intersections.get(key) ?? 0) + run);
      }
      i = end;
    }
  }

  averagePrecision(thresholds: number[] = [0.5, 0.75, 0.9]): AveragePrecision {
    const nTrue = objectsIn(this.#areaTrue);
    const nPred = objectsIn(this.#areaPredicted);
    const pairs = this.pairs();
    const result: AveragePrecision = { ap: [], tp: [], fp: [], fn: [] };
    const nMin = Math.min(nTrue, nPred);
    for (const threshold of thresholds) {
      const tp = nMin === 0 ? 0 : matchedPairs(pairs, threshold, nMin).length;
      const fp = nPred - tp;
      const fn = nTrue - tp;
      result.tp.push(tp);
      result.fp.push(fp);
      result.fn.push(fn);
      result.ap.push(tp + fp + fn === 0 ? 1 : tp / (tp + fp + fn));
    }
    return result;
  }

  /** Every overlapping pair with its IoU. */
  pairs(): OverlapPair[] {
    const pairs: OverlapPair[] = [];
    for (const [key, inter] of this.#intersections) {
      const a = Math.floor(key / this.#stride);
      const b = key % this.#stride;
      pairs.push({ truth: a, predicted: b, iou: inter / (this.#areaTrue[a]! + this.#areaPredicted[b]! - inter) });
    }
    return pairs;
  }
}

/** Labels with at least one pixel (0, the background, is none). */
function objectsIn(areas: Float64Array): number {
  let n = 0;
  for (let label = 1; label < areas.length; label++) if (areas[label]! > 0) n++;
  return n;
}

/**
 * Which objects the matching above pairs at one threshold, for scoring parts of an image
 * (training/held-out-tiles.ts): the label images renumbered 1..n in raster order, and for each
 * truth object (index = its new id) the predicted object it is matched to, 0 for none.
 */
interface ObjectMatching {
  truth: Uint32Array;
  predicted: Uint32Array;
  trueCount: number;
  predictedCount: number;
  partnerOfTruth: Uint32Array;
}

export function matchObjects(truth: Uint32Array, predicted: Uint32Array, threshold: number): ObjectMatching {
  if (truth.length !== predicted.length) throw new Error(`label images differ in size: ${truth.length} vs ${predicted.length} pixels`);
  const t = truth.slice();
  const p = predicted.slice();
  const trueCount = renumberInRasterOrder(t);
  const predictedCount = renumberInRasterOrder(p);
  const partnerOfTruth = new Uint32Array(trueCount + 1);
  const nMin = Math.min(trueCount, predictedCount);
  const counts = new OverlapCounts(trueCount, predictedCount);
  counts.addRow(t, p);
  if (nMin > 0) for (const pair of matchedPairs(counts.pairs(), threshold, nMin)) partnerOfTruth[pair.truth] = pair.predicted;
  return { truth: t, predicted: p, trueCount, predictedCount, partnerOfTruth };
}

interface OverlapPair {
  truth: number;
  predicted: number;
  iou: number;
}

/**
 * Cellpose's optimal matching at one threshold (its size is TP). Objects that share no pixel have IoU 0 and
 * cost 0, so the assignment splits into independent connected groups of overlapping objects;
 * each group is solved exactly (usually a single pair).
 */
function matchedPairs(pairs: OverlapPair[], threshold: number, nMin: number): OverlapPair[] {
  const candidates = pairs.filter((pair) => pair.iou >= threshold);
  // Union-find over truth ids (positive) and predicted ids (negative) joined by candidate pairs.
  const parent = new Map<number, number>();
  const find = (v: number): number => {
    let root = v;
    while (parent.get(root) !== undefined && parent.get(root) !== root) root = parent.get(root)!;
    parent.set(v, root);
    return root;
  };
  for (const { truth, predicted } of candidates) {
    const a = find(truth),
      b = find(-predicted);
    if (a !== b) parent.set(a, b);
    if (!parent.has(b)) parent.set(b, b);
  }
  const groups = new Map<number, OverlapPair[]>();
  for (const pair of candidates) {
    const root = find(pair.truth);
    const list = groups.get(root) ?? [];
    list.push(pair);
    groups.set(root, list);
  }
  const matches: OverlapPair[] = [];
  for (const group of groups.values()) {
    if (group.length === 1) {
      matches.push(group[0]!);
      continue;
    }
    const rows = [...new Set(group.map((g) => g.truth))];
    const cols = [...new Set(group.map((g) => g.predicted))];
    const cost = new Float64Array(rows.length * cols.length);
    for (const g of group) cost[rows.indexOf(g.truth) * cols.length + cols.indexOf(g.predicted)] = -1 - g.iou / (2 * nMin);
    const assignment = minimumCostAssignment(cost, rows.length, cols.length);
    for (let r = 0; r < rows.length; r++) {
      const c = assignment[r]!;
      if (c >= 0 && cost[r * cols.length + c]! < 0) matches.push(group.find((g) => g.truth === rows[r] && g.predicted === cols[c])!);
    }
  }
  return matches;
}
