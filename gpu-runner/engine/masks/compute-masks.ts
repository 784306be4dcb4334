// From network outputs to a label image, Cellpose's compute_masks pipeline: foreground by cell
// probability, flow dynamics, seeds and growth, removal of oversized masks, flow-error QC, removal
// of small masks and hole filling; then each mask keeps its largest piece (common/geometry/label-largest-piece.ts).
// Labels come out in raster order of each mask's first pixel.
//
// Numeric hot loops: every index is bounded by a loop over the array's own length (or width ×
// height, or a row's samples). The `!`s state that bound to noUncheckedIndexedAccess rather
// than check it again in the inner loop.
import { CELLPOSE_MASK_DEFAULTS } from "../../../schema/mask-defaults.ts";
import { FLOW_SCALE } from "../flow-targets.ts";
import { renumberInRasterOrder } from "../../../common/geometry/label-image.ts";
import { removeBadFlowMasks } from "./flow-error.ts";
import { followFlows } from "./follow-flows.ts";
import { fillHolesAndRemoveSmall } from "./holes-and-sizes.ts";
import { defaultThreadCount, sharedFloat32, sharedInt32 } from "./mask-threads.ts";
import { masksFromEndPoints } from "./seeds.ts";
import { keepLargestComponents } from "../../../common/geometry/label-largest-piece.ts";

export interface MaskParams {
  /** Pixels with cell-probability logit above this are foreground (Cellpose: 0). */
  cellprobThreshold: number;
  /** Masks with flow error above this are removed; 0 disables the check (Cellpose: 0.4). */
  flowThreshold: number;
  /** Masks with fewer pixels are removed (Cellpose: 15). */
  minSize: number;
  /** Masks larger than this fraction of the image are removed (Cellpose: 0.4). */
  maxSizeFraction: number;
  /**
   * Euler steps of the flow dynamics (Cellpose: 200), counted at the network's resolution: flows
   * resized up from a shrunk pass take more steps (`atImageResolution`).
   */
  niter: number;
  /**
   * Threads for flow following and the flow-error check, this one included (default: the
   * machine's available parallelism; 1 = no worker threads). Small images always use one.
   */
  threads?: number;
}

// Below this many foreground pixels the work is a few milliseconds, less than handing it out.
const MIN_FOREGROUND_FOR_THREADS = 32_768;
// Threads need the flows in shared memory, a copy of 8 bytes per pixel; past this image size the
// copy would undo the memory bound that scaling the flows in place keeps (8192x8192 and up).
const MAX_PIXELS_FOR_THREADS = 16 * 1024 * 1024;

export const DEFAULT_MASK_PARAMS: MaskParams = { ...CELLPOSE_MASK_DEFAULTS, maxSizeFraction: 0.4, niter: 200 };

/**
 * The parameters for flows resized to the image from a network pass run at `networkScale` (network
 * pixels per image pixel). A flow step moves at most about one pixel wherever the dynamics run, so
 * on a pass that shrank the image (objects larger than the model's size) a pixel needs 1/scale
 * times the steps to reach its object's centre: too few left large nuclei cut into pieces (BBBC039
 * held-out images enlarged 5×: AP@0.5 0.829 with 200 steps, 0.885 with 1000). Cellpose runs
 * `200 / rescale` steps for the same reason. An enlarged pass keeps the steps it was given.
 */
export function atImageResolution(params: MaskParams, networkScale: number): MaskParams {
  if (!(networkScale < 1)) return params;
  return { ...params, niter: Math.round(params.niter / networkScale) };
}

export interface MaskResult {
  labels: Uint32Array;
  count: number;
  timings: Record<string, number>;
}

/**
 * `flows` (planar [2, H, W], network scale) is modified in place: it is masked to the foreground
 * and divided by the flow scale, which saves a full-size copy on large images. (With threads the
 * masked flows go to a shared copy instead and `flows` is left as it was.)
 */
export function computeMasks(flows: Float32Array, cellprob: Float32Array, width: number, height: number, params: MaskParams = DEFAULT_MASK_PARAMS): MaskResult {
  const plane = width * height;
  if (cellprob.length !== plane || flows.length !== 2 * plane) throw new Error("computeMasks: flows must be [2, H, W] and cellprob [H, W]");
  const timings: Record<string, number> = {};
  let t = performance.now();
  const lap = (stage: string) => {
    const now = performance.now();
    timings[stage] = now - t;
    t = now;
  };

  let foregroundCount = 0;
  for (let i = 0; i < plane; i++) if (cellprob[i]! > params.cellprobThreshold) foregroundCount++;
  if (foregroundCount === 0) return { labels: new Uint32Array(plane), count: 0, timings };
  const threads =
    foregroundCount >= MIN_FOREGROUND_FOR_THREADS && plane <= MAX_PIXELS_FOR_THREADS ? Math.max(1, Math.floor(params.threads ?? defaultThreadCount())) : 1;
  const foreground = threads > 1 ? sharedInt32(foregroundCount) : new Int32Array(foregroundCount);
  const unitFlows = threads > 1 ? sharedFloat32(2 * plane) : flows;
  const scale = 1 / FLOW_SCALE;
  for (let i = 0, n = 0; i < plane; i++) {
    if (cellprob[i]! > params.cellprobThreshold) {
      foreground[n++] = i;
      unitFlows[i] = flows[i]! * scale;
      unitFlows[plane + i] = flows[plane + i]! * scale;
    } else {
      unitFlows[i] = 0;
      unitFlows[plane + i] = 0;
    }
  }
  lap("foreground");
  const ends = followFlows(unitFlows, width, height, foreground, params.niter, threads);
  lap("dynamics");
  const labels = masksFromEndPoints(ends, foreground, width, height);
  removeOversized(labels, params.maxSizeFraction * plane);
  let count = renumberInRasterOrder(labels);
  lap("seeds");
  if (params.flowThreshold > 0 && count > 0) {
    // Inside every mask the flows are unmasked, so the in-place masking above does not affect QC.
    if (removeBadFlowMasks(labels, count, unitFlows, width, params.flowThreshold, threads) > 0) count = renumberInRasterOrder(labels);
  }
  lap("flowQC");
  fillHolesAndRemoveSmall(labels, count, width, params.minSize);
  count = renumberInRasterOrder(labels);
  if (keepLargestComponents(labels, count, width) > 0) count = renumberInRasterOrder(labels);
  lap("cleanup");
  return { labels, count, timings };
}

function removeOversized(labels: Uint32Array, maxPixels: number): void {
  let max = 0;
  for (let i = 0; i < labels.length; i++) if (labels[i]! > max) max = labels[i]!;
  const area = new Float64Array(max + 1);
  for (let i = 0; i < labels.length; i++) area[labels[i]!]!++;
  let any = false;
  for (let k = 1; k <= max; k++) if (area[k]! > maxPixels) any = true;
  if (!any) return;
  for (let i = 0; i < labels.length; i++) if (area[labels[i]!]! > maxPixels) labels[i] = 0;
}
