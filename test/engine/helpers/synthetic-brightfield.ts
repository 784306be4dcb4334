// Brightfield-like images: dark nuclei on a bright field whose uneven illumination (vignetting,
// darker towards the corners) and cell-scale texture are as strong as the nuclei themselves.
// renderInvertedBrightfield is the plane the diameter estimate sees (inverted, bright nuclei);
// renderBrightfield is what a camera records.
import type { DecodedImage } from "../../../common/decode/index.ts";
import type { LabelImage } from "../../fixtures/labels.ts";

export function renderInvertedBrightfield(scene: LabelImage): DecodedImage {
  const { width, height, labels } = scene;
  const data = new Float32Array(width * height);
  const cx = width / 2,
    cy = height / 2,
    reach = Math.hypot(cx, cy);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const illumination = (0.6 * ((x - cx) ** 2 + (y - cy) ** 2)) / reach ** 2;
      const texture = 0.15 * Math.sin(x / 9 + 2 * Math.sin(y / 31)) * Math.cos(y / 11 + Math.sin(x / 27));
      const nucleus = labels[y * width + x] !== 0 ? 0.5 : 0;
      data[y * width + x] = 1000 * (0.2 + illumination + texture + nucleus);
    }
  }
  return { width, height, channels: 1, bitDepth: 16, sampleFormat: "uint", data };
}

export function renderBrightfield(scene: LabelImage): DecodedImage {
  const inverted = renderInvertedBrightfield(scene);
  return { ...inverted, data: inverted.data.map((v) => 1600 - v) };
}
