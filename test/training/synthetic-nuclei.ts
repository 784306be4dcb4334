// Test fixture: a fluorescence-like image of non-overlapping bright discs with its label image,
// prepared for training with the engine's flow targets.
import { flowsFromLabels } from "../../gpu-runner/engine/flow-targets.ts";
import type { PreparedImage } from "../../gpu-runner/training/augment.ts";
import { SeededRandom } from "../../gpu-runner/training/random.ts";

export function syntheticNuclei(width: number, height: number, radius: number, seed: number): { image: Float32Array; labels: Uint32Array } {
  const random = new SeededRandom(seed);
  const labels = new Uint32Array(width * height);
  const image = new Float32Array(width * height);
  let next = 1;
  for (let attempt = 0; attempt < 200; attempt++) {
    const cx = radius + random.next() * (width - 2 * radius),
      cy = radius + random.next() * (height - 2 * radius);
    const r = radius * (0.7 + 0.6 * random.next());
    let free = true;
    for (let y = Math.floor(cy - r); y <= cy + r && free; y++)
      for (let x = Math.floor(cx - r); x <= cx + r; x++) {
        if (y >= 0 && y < height && x >= 0 && x < width && labels[y * width + x] !== 0 && Math.hypot(x - cx, y - cy) <= r + 1) {
          free = false;
          break;
        }
      }
    if (!free) continue;
    const brightness = 0.5 + 0.5 * random.next();
    for (let y = Math.max(0, Math.floor(cy - r)); y < Math.min(height, cy + r + 1); y++) {
      for (let x = Math.max(0, Math.floor(cx - r)); x < Math.min(width, cx + r + 1); x++) {
        if (Math.hypot(x - cx, y - cy) <= r) {
          labels[y * width + x] = next;
          image[y * width + x] = brightness;
        }
      }
    }
    next++;
  }
  for (const [i, value] of image.entries()) image[i] = value + 0.05 * random.normal();
  return { image, labels };
}

export function preparedSyntheticNuclei(id: string, size: number, seed: number): PreparedImage {
  const { image, labels } = syntheticNuclei(size, size, 6, seed);
  const foreground = Uint8Array.from(labels, (l) => (l ? 1 : 0));
  return { id, width: size, height: size, channels: 1, image, flows: flowsFromLabels(labels, size, size), foreground, scaleToModel: 1 };
}
