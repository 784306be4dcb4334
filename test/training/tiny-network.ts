// Test fixtures: a three-level network small enough for finite differences, and a batch whose
// targets are a real segmentation problem (a bright disc and a bright square on a dark field).
import * as ort from "onnxruntime-node";
import type { NetworkConfig } from "../../gpu-runner/network/flow-network.ts";
import { randomData } from "./gradient-check.ts";

export const TINY_NETWORK: NetworkConfig = { inputChannels: 2, widths: [3, 4, 5] };

/** [N, C, S, S] images and [N, 3, S, S] targets: unit vectors pointing to each object's centre. */
export function syntheticBatch(count: number, channels: number, size: number): { images: ort.Tensor; targets: ort.Tensor } {
  const images = new Float32Array(count * channels * size * size);
  const targets = new Float32Array(count * 3 * size * size);
  const plane = size * size;
  for (let n = 0; n < count; n++) {
    const cy = size * (0.3 + (0.4 * ((n * 37) % 10)) / 10);
    const cx = size * (0.3 + (0.4 * ((n * 61) % 10)) / 10);
    const radius = size * 0.22;
    const noise = randomData(plane, 100 + n, -0.05, 0.05);
    for (let y = 0; y < size; y++) {
      for (let x = 0; x < size; x++) {
        const dy = cy - y,
          dx = cx - x;
        const distance = Math.hypot(dy, dx);
        const inside = distance < radius;
        for (let c = 0; c < channels; c++) images[(n * channels + c) * plane + y * size + x] = (inside ? 0.8 : 0.1) + noise[y * size + x]!;
        const t = n * 3 * plane + y * size + x;
        targets[t] = inside && distance > 0 ? dy / distance : 0;
        targets[t + plane] = inside && distance > 0 ? dx / distance : 0;
        targets[t + 2 * plane] = inside ? 1 : 0;
      }
    }
  }
  return {
    images: new ort.Tensor("float32", images, [count, channels, size, size]),
    targets: new ort.Tensor("float32", targets, [count, 3, size, size]),
  };
}
