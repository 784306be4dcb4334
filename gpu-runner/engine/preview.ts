// The dashboard viewer's picture of an image: a pyramid of 8-bit PNG tiles (schema/preview-tiles.ts),
// each channel contrast-stretched between its 0.5th and 99.8th percentiles (16-bit microscopy is
// mostly dark when shown linearly). One channel is gray, two are a magenta/green composite, three
// or more show the first three as red, green and blue: the rule in common/stretch.ts, which the
// client's overlay pictures follow too.
//
// Levels halve the resolution from the finest (full resolution when the image has at most
// PREVIEW_MAX_PIXELS, else the first power-of-two reduction below it: stored bytes stay bounded)
// to the coarsest whose long side fits COARSEST_MAX_SIDE, which the viewer loads first. Every tile
// is box-averaged straight from the decoded image, so memory beyond it is one tile at a time plus
// the PNGs; the stretch uses percentiles of one overview, so all levels and tiles match.
import { encode as encodePng } from "fast-png";
import { PREVIEW_TILE_SIDE, type PreviewLevel, writePreviewArchive } from "../../schema/preview-tiles.ts";
import type { DecodedImage } from "../../common/decode/index.ts";
import { shrinkRegion, stretchOf, toBytes, toRgb } from "../../common/stretch.ts";

/** The finest level holds at most this many pixels (4096 × 4096); larger images start reduced. */
export const PREVIEW_MAX_PIXELS = 4096 * 4096;
/** The coarsest level's long side: at most 2 × 2 tiles, the viewer's first picture. */
export const COARSEST_MAX_SIDE = 1024;

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
  return encodePng({ width, height, data: toRgb(channels, width * height), depth: 8, channels: 3 });
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
