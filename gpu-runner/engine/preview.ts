// The dashboard viewer's picture of an image: a pyramid of 8-bit PNG tiles (schema/preview-tiles.ts),
// each channel contrast-stretched between its 0.5th and 99.8th percentiles (16-bit microscopy is
// mostly dark when shown linearly). One channel is gray, two are a magenta/green composite, three
// or more show the first three as red, green and blue.
//
// Levels halve the resolution from the finest (full resolution when the image has at most
// PREVIEW_MAX_PIXELS, else the first power-of-two reduction below it: stored bytes stay bounded)
// to the coarsest whose long side fits COARSEST_MAX_SIDE, which the viewer loads first. Every tile
// is box-averaged straight from the decoded image, so memory beyond it is one tile at a time plus
// the PNGs; the stretch uses percentiles of one overview, so all levels and tiles match.
import { encode as encodePng } from "fast-png";
import { PREVIEW_TILE_SIDE, type PreviewLevel, writePreviewArchive } from "../../schema/preview-tiles.ts";
import type { DecodedImage } from "../../common/decode/index.ts";
import { percentiles } from "./normalize.ts";

/** The finest level holds at most this many pixels (4096 × 4096); larger images start reduced. */
export const PREVIEW_MAX_PIXELS = 4096 * 4096;
/** The coarsest level's long side: at most 2 × 2 tiles, the viewer's first picture. */
export const COARSEST_MAX_SIDE = 1024;
/** The percentiles are taken from an overview this size (long side). */
const STRETCH_OVERVIEW_SIDE = 2048;
const LOW_PERCENTILE = 0.5;
const HIGH_PERCENTILE = 99.8;

interface Stretch {
  low: number;
  scale: number;
}

/**
 * Box-average of one planar channel over the output rectangle [ox0, ox1) × [oy0, oy1) of a level
 * reduced by `factor` (edge boxes average what they cover).
 */
function shrinkRegion(channel: Float32Array, width: number, height: number, factor: number, ox0: number, oy0: number, ox1: number, oy1: number): Float32Array {
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

function stretchOf(channel: Float32Array, width: number, height: number): Stretch {
  const factor = Math.max(1, Math.ceil(Math.max(width, height) / STRETCH_OVERVIEW_SIDE));
  const overview = shrinkRegion(channel, width, height, factor, 0, 0, Math.ceil(width / factor), Math.ceil(height / factor));
  const [low, high] = percentiles(overview, [LOW_PERCENTILE, HIGH_PERCENTILE]) as [number, number];
  const spread = high - low;
  return { low, scale: spread > 0 ? 255 / spread : 0 };
}

function toBytes(values: Float32Array, { low, scale }: Stretch): Uint8Array {
  const out = new Uint8Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = Math.max(0, Math.min(255, Math.round((values[i]! - low) * scale)));
  return out;
}

/** Powers of two from the finest level the pixel bound allows to the coarsest the viewer starts with. */
export function previewFactors(width: number, height: number): number[] {
  let finest = 1;
  while (Math.ceil(width / finest) * Math.ceil(height / finest) > PREVIEW_MAX_PIXELS) finest *= 2;
  const factors = [finest];
  while (Math.max(width, height) / factors.at(-1)! > COARSEST_MAX_SIDE) factors.push(factors.at(-1)! * 2);
  return factors;
}

function encodeTile(channels: Uint8Array[], width: number, height: number): Uint8Array {
  if (channels.length === 1) return encodePng({ width, height, data: channels[0]!, depth: 8, channels: 1 });
  const [r, g, b] = channels.length === 2 ? [channels[0]!, channels[1]!, channels[0]!] : channels;
  const rgb = new Uint8Array(width * height * 3);
  for (let i = 0; i < width * height; i++) {
    rgb[3 * i] = r![i]!;
    rgb[3 * i + 1] = g![i]!;
    rgb[3 * i + 2] = b![i]!;
  }
  return encodePng({ width, height, data: rgb, depth: 8, channels: 3 });
}

/** What an image given to previewTiles stands for: a full image of width × height, reduced by `factor` (1: itself). */
export interface PreviewSource {
  factor: number;
  width: number;
  height: number;
}

/**
 * The preview tile archive of a decoded image (made before anything normalises its pixels in place),
 * or of the finest level of a larger one already reduced (preview-reduction.ts, block by block).
 */
export function previewTiles(image: DecodedImage, full: PreviewSource = { factor: 1, width: image.width, height: image.height }): Uint8Array {
  const plane = image.width * image.height;
  const planes = Array.from({ length: Math.min(image.channels, 3) }, (_, c) => image.data.subarray(c * plane, (c + 1) * plane));
  const stretches = planes.map((p) => stretchOf(p, image.width, image.height));
  const levels: Omit<PreviewLevel, "tiles">[] = [];
  const tiles: Uint8Array[][] = [];
  for (const factor of previewFactors(full.width, full.height)) {
    // ceil(ceil(W / f) / r) = ceil(W / (f r)): a level of the reduced image is that level of the full one.
    const relative = factor / full.factor;
    if (!Number.isInteger(relative) || relative < 1) throw new Error(`a preview reduced by ${full.factor} cannot make the level reduced by ${factor}`);
    const width = Math.ceil(full.width / factor);
    const height = Math.ceil(full.height / factor);
    const columns = Math.ceil(width / PREVIEW_TILE_SIDE);
    const rows = Math.ceil(height / PREVIEW_TILE_SIDE);
    const pngs: Uint8Array[] = [];
    for (let row = 0; row < rows; row++) {
      for (let column = 0; column < columns; column++) {
        const [x0, y0] = [column * PREVIEW_TILE_SIDE, row * PREVIEW_TILE_SIDE];
        const [x1, y1] = [Math.min(width, x0 + PREVIEW_TILE_SIDE), Math.min(height, y0 + PREVIEW_TILE_SIDE)];
        const channels = planes.map((p, c) => toBytes(shrinkRegion(p, image.width, image.height, relative, x0, y0, x1, y1), stretches[c]!));
        pngs.push(encodeTile(channels, x1 - x0, y1 - y0));
      }
    }
    levels.push({ factor, width, height, columns, rows });
    tiles.push(pngs);
  }
  return writePreviewArchive({ width: full.width, height: full.height, tile: PREVIEW_TILE_SIDE, levels }, tiles);
}
