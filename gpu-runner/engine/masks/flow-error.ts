// Flow-error quality control, after Cellpose's dynamics.remove_bad_flow_masks / flow_error: the
// flows a mask implies (its heat diffusion, heat-diffusion.ts) are compared with the network's;
// masks whose mean squared difference exceeds the threshold are dropped. Masks are independent,
// so with threads > 1 they are shared out in chunks (mask-threads.ts).
//
// Numeric hot loops: every index is bounded by a loop over the array's own length (or width ×
// height, or a row's samples). The `!`s state that bound to noUncheckedIndexedAccess rather
// than check it again in the inner loop.
import { labelBoxes } from "../../../common/geometry/label-image.ts";
import { DiffusionScratch, diffuseInMask } from "../heat-diffusion.ts";
import { diffusionSteps } from "../../../schema/work-limits.ts";
import { runChunks } from "./mask-threads.ts";

/** Masks per chunk handed to a thread; masks differ in size, so chunks stay small for balance. */
const FLOW_ERROR_CHUNK = 8;

/**
 * Zeroes masks whose flow error exceeds `threshold`. `labels` must be numbered 1..count;
 * `unitFlows` are the network flows divided by the flow scale (planar [2, H, W]); with threads > 1
 * they must be a view on a SharedArrayBuffer. Returns the number of masks removed.
 */
export function removeBadFlowMasks(labels: Uint32Array, count: number, unitFlows: Float32Array, width: number, threshold: number, threads = 1): number {
  if (count === 0) return 0;
  const boxes = maskBoxes(labels, width, count, threads > 1);
  const errors = threads > 1 ? new Float64Array(new SharedArrayBuffer(8 * (count + 1))) : new Float64Array(count + 1);
  if (threads > 1) {
    const shared = new Uint32Array(new SharedArrayBuffer(4 * labels.length));
    shared.set(labels);
    const scratch = new DiffusionScratch();
    runChunks(
      { kind: "flowError", labels: shared, unitFlows, boxes, errors, width, chunkSize: FLOW_ERROR_CHUNK },
      Math.ceil(count / FLOW_ERROR_CHUNK),
      threads,
      (chunk) => {
        flowErrorsRange(shared, unitFlows, boxes, width, 1 + chunk * FLOW_ERROR_CHUNK, Math.min(count, (chunk + 1) * FLOW_ERROR_CHUNK), errors, scratch);
      },
    );
  } else {
    flowErrorsRange(labels, unitFlows, boxes, width, 1, count, errors, new DiffusionScratch());
  }
  const drop = new Uint8Array(count + 1);
  let removed = 0;
  for (let k = 1; k <= count; k++)
    if (errors[k]! > threshold) {
      drop[k] = 1;
      removed++;
    }
  if (removed > 0) for (let i = 0; i < labels.length; i++) if (drop[labels[i]!]) labels[i] = 0;
  return removed;
}

/** Per label k, (x0, y0, w, h) of its bounding box at [4k..4k+3]; w = h = 0 for an empty label. */
function maskBoxes(labels: Uint32Array, width: number, count: number, shared: boolean): Int32Array {
  const boxes = labelBoxes(labels, width, count);
  const packed = shared ? new Int32Array(new SharedArrayBuffer(16 * (count + 1))) : new Int32Array(4 * (count + 1));
  for (let k = 1; k <= count; k++) {
    if (boxes.area[k] === 0) continue;
    packed[4 * k] = boxes.minX[k]!;
    packed[4 * k + 1] = boxes.minY[k]!;
    packed[4 * k + 2] = boxes.maxX[k]! - boxes.minX[k]! + 1;
    packed[4 * k + 3] = boxes.maxY[k]! - boxes.minY[k]! + 1;
  }
  return packed;
}

/**
 * Mean squared flow error of masks first..last (inclusive) into errors[k]; the unit of work of a
 * thread. Each mask diffuses for its own box's steps (schema/work-limits.ts, diffusionSteps), as its flow targets do.
 */
export function flowErrorsRange(
  labels: Uint32Array,
  unitFlows: Float32Array,
  boxes: Int32Array,
  width: number,
  first: number,
  last: number,
  errors: Float64Array,
  scratch: DiffusionScratch,
): void {
  const plane = labels.length;
  for (let k = first; k <= last; k++) {
    const x0 = boxes[4 * k]!,
      y0 = boxes[4 * k + 1]!,
      w = boxes[4 * k + 2]!,
      h = boxes[4 * k + 3]!;
    if (w === 0) continue;
    diffuseInMask(labels, width, k, x0, y0, w, h, diffusionSteps(w, h), scratch);
    const { t, inside } = scratch;
    const stride = w + 2;
    let error = 0,
      area = 0;
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const j = (y + 1) * stride + x + 1;
        if (!inside[j]) continue;
        const i = (y0 + y) * width + x0 + x;
        const dy = t[j + stride]! - t[j - stride]!,
          dx = t[j + 1]! - t[j - 1]!;
        const norm = 1e-60 + Math.sqrt(dy * dy + dx * dx);
        const ey = dy / norm - unitFlows[i]!;
        const ex = dx / norm - unitFlows[plane + i]!;
        error += ey * ey + ex * ex;
        area++;
      }
    }
    errors[k] = error / area;
  }
}
