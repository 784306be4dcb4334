// The dashboard viewer's picture of an image: an 8-bit PNG, each channel contrast-stretched
// between its 0.5th and 99.8th percentiles (16-bit microscopy is mostly dark when shown linearly),
// box-averaged down so its long side is at most PREVIEW_MAX_SIDE. One channel is gray, two are a
// magenta/green composite, three or more show the first three as red, green and blue.
import { encode as encodePng } from "fast-png";
import type { DecodedImage } from "./decode/index.ts";
import { percentiles } from "./normalize.ts";

export const PREVIEW_MAX_SIDE = 2048;
const LOW_PERCENTILE = 0.5;
const HIGH_PERCENTILE = 99.8;

/** Box-average of one planar channel by an integer factor (edge boxes average what they cover). */
function shrink(channel: Float32Array, width: number, height: number, factor: number, outWidth: number, outHeight: number): Float32Array {
  if (factor === 1) return channel;
  const out = new Float32Array(outWidth * outHeight);
  for (let oy = 0; oy < outHeight; oy++) {
    const y1 = Math.min(height, (oy + 1) * factor);
    for (let ox = 0; ox < outWidth; ox++) {
      const x1 = Math.min(width, (ox + 1) * factor);
      let sum = 0;
      let n = 0;
      for (let y = oy * factor; y < y1; y++) {
        for (let x = ox * factor, row = y * width; x < x1; x++, n++) sum += channel[row + x]!;
      }
      out[oy * outWidth + ox] = sum / n;
    }
  }
  return out;
}

function stretch(values: Float32Array): Uint8Array {
  const [low, high] = percentiles(values, [LOW_PERCENTILE, HIGH_PERCENTILE]) as [number, number];
  const out = new Uint8Array(values.length);
  const spread = high - low;
  if (!(spread > 0)) return out;
  const scale = 255 / spread;
  for (let i = 0; i < values.length; i++) out[i] = Math.max(0, Math.min(255, Math.round((values[i]! - low) * scale)));
  return out;
}

export function previewPng(image: DecodedImage): { png: Uint8Array; width: number; height: number } {
  const factor = Math.max(1, Math.ceil(Math.max(image.width, image.height) / PREVIEW_MAX_SIDE));
  const width = Math.ceil(image.width / factor);
  const height = Math.ceil(image.height / factor);
  const plane = image.width * image.height;
  const shown = Math.min(image.channels, 3);
  const channels: Uint8Array[] = [];
  for (let c = 0; c < shown; c++) {
    channels.push(stretch(shrink(image.data.subarray(c * plane, (c + 1) * plane), image.width, image.height, factor, width, height)));
  }
  if (shown === 1) return { png: encodePng({ width, height, data: channels[0]!, depth: 8, channels: 1 }), width, height };
  const [r, g, b] = shown === 2 ? [channels[0]!, channels[1]!, channels[0]!] : channels;
  const rgb = new Uint8Array(width * height * 3);
  for (let i = 0; i < width * height; i++) {
    rgb[3 * i] = r![i]!;
    rgb[3 * i + 1] = g![i]!;
    rgb[3 * i + 2] = b![i]!;
  }
  return { png: encodePng({ width, height, data: rgb, depth: 8, channels: 3 }), width, height };
}
