// How the service shows an image to people: each channel contrast-stretched to 8 bits between its
// 0.5th and 99.8th percentiles (16-bit microscopy is mostly dark when shown linearly), the
// percentiles taken on an overview of bounded size so a huge image costs no more than a small
// one; one channel is gray, two a magenta/green composite, three or more the first three as red,
// green and blue. Shared by the dashboard's preview tiles (gpu-runner/engine/preview.ts) and the
// client's overlay pictures (client/overlay.ts), so both show an image alike.
import { percentiles } from "./percentiles.ts";

const LOW_PERCENTILE = 0.5;
const HIGH_PERCENTILE = 99.8;
/** The percentiles are taken from an overview this size (long side). */
const STRETCH_OVERVIEW_SIDE = 2048;

interface Stretch {
  low: number;
  scale: number;
}

/**
 * Box-average of one planar channel over the output rectangle [ox0, ox1) × [oy0, oy1) of a level
 * reduced by `factor` (edge boxes average what they cover).
 */
export function shrinkRegion(
  channel: Float32Array,
  width: number,
  height: number,
  factor: number,
  ox0: number,
  oy0: number,
  ox1: number,
  oy1: number,
): Float32Array {
  const outWidth = ox1 - ox0;
  const out = new Float32Array(outWidth * (oy1 - oy0));
  for (let oy = oy0; oy < oy1; oy++) {
    const y1 = Math.min(height, (oy + 1) * factor);
    for (let ox = ox0; ox < ox1; ox++) {
      const x1 = Math.min(width, (ox + 1) * factor);
      let sum = 0;
      let n = 0;
      for (let y = oy * factor; y < y1; y++) {
        for (let x = ox * factor, row = y * width; x < x1; x++, n++) sum += channel[row + x]!;
      }
      out[(oy - oy0) * outWidth + (ox - ox0)] = sum / n;
    }
  }
  return out;
}

/** The values a stretch shows as 0 and 255. */
export interface DisplayRange {
  low: number;
  high: number;
}

/** The display range of one planar channel of width × height: its percentiles on an overview. */
export function displayRangeOf(channel: Float32Array, width: number, height: number): DisplayRange {
  const factor = Math.max(1, Math.ceil(Math.max(width, height) / STRETCH_OVERVIEW_SIDE));
  const overview = shrinkRegion(channel, width, height, factor, 0, 0, Math.ceil(width / factor), Math.ceil(height / factor));
  const [low, high] = percentiles(overview, [LOW_PERCENTILE, HIGH_PERCENTILE]) as [number, number];
  return { low, high };
}

/** The stretch that shows `low` as 0 and `high` as 255 (a flat range: all 0). */
export function stretchBetween({ low, high }: DisplayRange): Stretch {
  const spread = high - low;
  return { low, scale: spread > 0 ? 255 / spread : 0 };
}

/** The stretch of one planar channel of width × height. */
export function stretchOf(channel: Float32Array, width: number, height: number): Stretch {
  return stretchBetween(displayRangeOf(channel, width, height));
}

export function toBytes(values: Float32Array, { low, scale }: Stretch): Uint8Array {
  const out = new Uint8Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = Math.max(0, Math.min(255, Math.round((values[i]! - low) * scale)));
  return out;
}

/** Interleaved RGB of up to three stretched channels: gray, magenta/green, or red/green/blue. */
export function toRgb(channels: Uint8Array[], pixels: number): Uint8Array {
  const [r, g, b] =
    channels.length === 1 ? [channels[0]!, channels[0]!, channels[0]!] : channels.length === 2 ? [channels[0]!, channels[1]!, channels[0]!] : channels;
  const rgb = new Uint8Array(pixels * 3);
  for (let i = 0; i < pixels; i++) {
    rgb[3 * i] = r![i]!;
    rgb[3 * i + 1] = g![i]!;
    rgb[3 * i + 2] = b![i]!;
  }
  return rgb;
}
