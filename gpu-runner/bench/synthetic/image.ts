// Renders label images as fluorescence-like 16-bit images: bright nuclei with a soft edge on a dark,
// slightly uneven background, so the reference model has something realistic to segment.
import type { DecodedImage } from "../../../common/decode/index.ts";
import type { LabelImage } from "./labels.ts";

export function renderNuclei(scene: LabelImage): DecodedImage {
  const { width, height, labels } = scene;
  const data = new Float32Array(width * height);
  // Distance-like brightness: each object pixel gets brighter with the number of object
  // neighbours within 2 px, which darkens edges and keeps touching nuclei separable.
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const k = labels[y * width + x]!;
      let value = 200 + 20 * Math.sin(x / 17) * Math.cos(y / 23);
      if (k !== 0) {
        let same = 0;
        for (let dy = -2; dy <= 2; dy++) {
          for (let dx = -2; dx <= 2; dx++) {
            const yy = y + dy,
              xx = x + dx;
            if (yy >= 0 && xx >= 0 && yy < height && xx < width && labels[yy * width + xx] === k) same++;
          }
        }
        value += 1500 + 100 * same;
      }
      data[y * width + x] = Math.round(value);
    }
  }
  return { width, height, channels: 1, bitDepth: 16, sampleFormat: "uint", data };
}
