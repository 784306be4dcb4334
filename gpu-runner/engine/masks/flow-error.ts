// Flow-error quality control, after Cellpose's dynamics.remove_bad_flow_masks / flow_error: the
// flows a mask implies (flow-targets.ts) are compared with the network's; masks whose mean squared
// difference exceeds the threshold are dropped.
import { labelBoxes } from "../labels.ts";
import { DiffusionScratch, diffuseInMask } from "./mask-diffusion.ts";

/**
 * Zeroes masks whose flow error exceeds `threshold`. `labels` must be numbered 1..count;
 * `unitFlows` are the network flows divided by the flow scale (planar [2, H, W]).
 * Returns the number of masks removed.
 */
export function removeBadFlowMasks(labels: Uint32Array, count: number, unitFlows: Float32Array, width: number, threshold: number): number {
  if (count === 0) return 0;
  const boxes = labelBoxes(labels, width, count);
  const plane = labels.length;
  let iterations = 0;
  for (let k = 1; k <= count; k++) {
    if (boxes.area[k] === 0) continue;
    iterations = Math.max(iterations, 2 * (boxes.maxY[k]! - boxes.minY[k]! + 1 + boxes.maxX[k]! - boxes.minX[k]! + 1 + 2));
  }
  const bad: number[] = [];
  const scratch = new DiffusionScratch();
  for (let k = 1; k <= count; k++) {
    if (boxes.area[k] === 0) continue;
    const x0 = boxes.minX[k]!, y0 = boxes.minY[k]!;
    const w = boxes.maxX[k]! - x0 + 1, h = boxes.maxY[k]! - y0 + 1;
    diffuseInMask(labels, width, k, x0, y0, w, h, iterations, scratch);
    const { t, inside } = scratch;
    const stride = w + 2;
    let error = 0;
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const j = (y + 1) * stride + x + 1;
        if (!inside[j]) continue;
        const i = (y0 + y) * width + x0 + x;
        const dy = t[j + stride]! - t[j - stride]!, dx = t[j + 1]! - t[j - 1]!;
        const norm = 1e-60 + Math.sqrt(dy * dy + dx * dx);
        const ey = dy / norm - unitFlows[i]!;
        const ex = dx / norm - unitFlows[plane + i]!;
        error += ey * ey + ex * ex;
      }
    }
    if (error / boxes.area[k]! > threshold) bad.push(k);
  }
  if (bad.length === 0) return 0;
  const drop = new Uint8Array(count + 1);
  for (const k of bad) drop[k] = 1;
  for (let i = 0; i < labels.length; i++) if (drop[labels[i]!]) labels[i] = 0;
  return bad.length;
}
