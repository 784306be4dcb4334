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
  const t = truth.slice();
  const p = predicted.slice();
  const nTrue = renumberInRasterOrder(t);
  const nPred = renumberInRasterOrder(p);
  const pairs = overlapPairs(t, p, nTrue, nPred);
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
  if (nMin > 0) for (const pair of matchedPairs(overlapPairs(t, p, trueCount, predictedCount), threshold, nMin)) partnerOfTruth[pair.truth] = pair.predicted;
  return { truth: t, predicted: p, trueCount, predictedCount, partnerOfTruth };
}

interface OverlapPair {
  truth: number;
  predicted: number;
  iou: number;
}

function overlapPairs(t: Uint32Array, p: Uint32Array, nTrue: number, nPred: number): OverlapPair[] {
  const areaTrue = new Float64Array(nTrue + 1);
  const areaPred = new Float64Array(nPred + 1);
  const intersections = new Map<number, number>();
  const stride = nPred + 1;
  for (let i = 0; i < t.length; i++) {
    const a = t[i]!,
      b = p[i]!;
    areaTrue[a]!++;
    areaPred[b]!++;
    if (a !== 0 && b !== 0) {
      const key = a * stride + b;
      intersections.set(key, (intersections.get(key) ?? 0) + 1);
    }
  }
  const pairs: OverlapPair[] = [];
  for (const [key, inter] of intersections) {
    const a = Math.floor(key / stride),
      b = key % stride;
    pairs.push({ truth: a, predicted: b, iou: inter / (areaTrue[a]! + areaPred[b]! - inter) });
  }
  return pairs;
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
