// The label mask as a 16-bit grayscale PNG (0 = background, ROI index + 1 = its pixels), the
// layout of the training data's labels/ folders.
import { encode } from "fast-png";

export function encodeLabelPng(labels: Uint32Array, width: number, height: number): Uint8Array {
  const data = new Uint16Array(labels.length);
  for (let i = 0; i < labels.length; i++) {
    const v = labels[i]!;
    if (v > 65_535) throw new Error(`label ${v} does not fit a 16-bit PNG (more than 65535 masks)`);
    data[i] = v;
  }
  return encode({ width, height, data, depth: 16, channels: 1 });
}
