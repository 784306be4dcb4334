// Cellpose's flow targets: for each mask, heat diffuses from a centre pixel for n iterations
// (T <- mean of T over the 3x3 neighbourhood restricted to the mask, plus 1 at the centre each
// step); the flow is the normalised central-difference gradient of T. After Cellpose's
// dynamics.masks_to_flows_gpu / center_of_mass / get_centers (Stringer et al. 2021, current
// version): centre = the mask pixel at the rounded mean position, or the mask pixel nearest to it;
// n = 2 × (bbox height + bbox width + 2) of each mask (schema/work-limits.ts, diffusionSteps).
import { DiffusionScratch, diffuseInMask } from "./heat-diffusion.ts";
import { diffusionSteps } from "../../schema/work-limits.ts";
import { labelBoxes, renumberInRasterOrder } from "../../common/geometry/label-image.ts";

/** Network flow outputs are this multiple of these unit flows (Cellpose trains on 5 × flows). */
export const FLOW_SCALE = 5;

/**
 * Flow targets of a label image: planar [2, H, W] = (dY, dX), unit length inside masks (0 where the
 * gradient vanishes, as in single-pixel masks) and 0 on background. Label values need not be
 * consecutive.
 */
export function flowsFromLabels(labels: Uint32Array, width: number, height: number): Float32Array {
  if (labels.length !== width * height) throw new Error(`labels hold ${labels.length} values, expected ${width}x${height}`);
  const flows = new Float32Array(2 * width * height);
  const compact = labels.slice();
  const count = renumberInRasterOrder(compact);
  if (count === 0) return flows;
  const boxes = labelBoxes(compact, width, count);
  const plane = width * height;
  const scratch = new DiffusionScratch();
  for (let k = 1; k <= count; k++) {
    const x0 = boxes.minX[k]!,
      y0 = boxes.minY[k]!;
    const w = boxes.maxX[k]! - x0 + 1,
      h = boxes.maxY[k]! - y0 + 1;
    diffuseInMask(compact, width, k, x0, y0, w, h, diffusionSteps(w, h), scratch);
    // Central differences on the padded box, normalised to unit vectors, mask pixels only.
    const t = scratch.t;
    const stride = w + 2;
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const i = (y0 + y) * width + x0 + x;
        if (compact[i] !== k) continue;
        const j = (y + 1) * stride + x + 1;
        const dy = t[j + stride]! - t[j - stride]!;
        const dx = t[j + 1]! - t[j - 1]!;
        const norm = 1e-60 + Math.sqrt(dy * dy + dx * dx);
        flows[i] = dy / norm;
        flows[plane + i] = dx / norm;
      }
    }
  }
  return flows;
}
