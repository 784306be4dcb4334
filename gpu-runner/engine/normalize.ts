// Per-channel percentile normalisation, Cellpose's normalize99: x' = (x - p_low) / (p_high - p_low)
// with p_low, p_high the 1st and 99th percentiles by default, computed like numpy's percentile
// (linear interpolation between order statistics). Shared by inference and training.
import type { DecodedImage } from "../../common/decode/index.ts";
import { percentiles } from "../../common/percentiles.ts";

interface PercentileRange {
  /** Percentile mapped to 0 (default 1). */
  lower: number;
  /** Percentile mapped to 1 (default 99). */
  upper: number;
}

export const DEFAULT_PERCENTILES: PercentileRange = { lower: 1, upper: 99 };

/**
 * Normalises every channel of a planar image into `out` (a new array by default; pass image.data
 * to normalise in place and save the memory). A channel whose two percentiles coincide (flat
 * image) becomes all zeros, as there is no contrast to scale.
 */
export function normalizeImage(
  image: DecodedImage,
  range: PercentileRange = DEFAULT_PERCENTILES,
  out: Float32Array = new Float32Array(image.data.length),
): Float32Array {
  return normalizeWithBounds(image, channelBounds(image, range), out);
}

/** Per channel, the values mapped to 0 and to 1. */
export interface ChannelBounds {
  low: number[];
  high: number[];
}

/** The percentiles of every channel of a planar image (what normalizeImage maps to 0 and 1). */
export function channelBounds(image: DecodedImage, range: PercentileRange = DEFAULT_PERCENTILES): ChannelBounds {
  if (!(range.lower >= 0 && range.lower < range.upper && range.upper <= 100)) {
    throw new Error(`invalid normalisation percentiles ${range.lower}..${range.upper}`);
  }
  const plane = image.width * image.height;
  const bounds: ChannelBounds = { low: [], high: [] };
  for (let c = 0; c < image.channels; c++) {
    const [low, high] = percentiles(image.data.subarray(c * plane, (c + 1) * plane), [range.lower, range.upper]);
    bounds.low.push(low!);
    bounds.high.push(high!);
  }
  return bounds;
}

/**
 * Maps each channel's bounds to 0 and 1: with bounds measured on the whole image (normalizeImage),
 * or on samples of an image too large to hold, so that every block of it is scaled alike.
 */
export function normalizeWithBounds(image: DecodedImage, bounds: ChannelBounds, out: Float32Array = new Float32Array(image.data.length)): Float32Array {
  if (bounds.low.length !== image.channels || bounds.high.length !== image.channels)
    throw new Error(`normalisation bounds for ${bounds.low.length} channels, the image has ${image.channels}`);
  const plane = image.width * image.height;
  for (let c = 0; c < image.channels; c++) {
    const channel = image.data.subarray(c * plane, (c + 1) * plane);
    const low = bounds.low[c]!;
    const target = out.subarray(c * plane, (c + 1) * plane);
    const spread = bounds.high[c]! - low;
    if (!(spread > 0)) {
      target.fill(0);
      continue;
    }
    const scale = 1 / spread;
    for (let i = 0; i < plane; i++) target[i] = (channel[i]! - low) * scale;
  }
  return out;
}
