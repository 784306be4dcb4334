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
// the PNGs; the stretch uses percentiles of one overview, so all levels and tiles match. A fanned-out
// prediction fixes the stretch once, from its survey's sample windows (image-survey.ts display), for
// its pyramid and its blocks' full-resolution tile packs (fullResolutionTiles) alike.
import { PREVIEW_TILE_SIDE, type PreviewLevel, writePreviewArchive } from "../../schema/preview-tiles.ts";
import type { DecodedImage } from "../../common/decode/index.ts";
import { type DisplayRange, displayRangeOf, shrinkRegion, stretchBetween, toBytes, toRgb } from "../../common/stretch.ts";
import { encodePng8 } from "./png-encode.ts";

// Exported for its test only (test/engine/preview.test.ts).
/** The finest level holds at most this many pixels (4096 × 4096); larger images start reduced. */
export const PREVIEW_MAX_PIXELS = 4096 * 4096;
// Exported for its test only (test/engine/preview.test.ts).
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
  if (channels.length === 1) return encodePng8(channels[0]!, width, height, 1);
  return encodePng8(toRgb(channels, width * height), width, height, 3);
}

/** What an image given to previewTiles stands for: a full image of width × height, reduced by `factor` (1: itself). */
interface PreviewSource {
  factor: number;
  width: number;
  height: number;
}

/** The planes a preview shows: the first three channels at most. */
function shownPlanes(image: DecodedImage): Float32Array[] {
  const plane = image.width * image.height;
  return Array.from({ length: Math.min(image.channels, 3) }, (_, c) => image.data.subarray(c * plane, (c + 1) * plane));
}

/** The display range of each shown channel of an image (or of a sample of one). */
export function displayRanges(image: DecodedImage): DisplayRange[] {
  return shownPlanes(image).map((p) => displayRangeOf(p, image.width, image.height));
}

/**
 * The preview tile archive of a decoded image (made before anything normalises its pixels in place),
 * or of the finest level of a larger one already reduced (preview-reduction.ts, block by block),
 * stretched by `display` when given (one range per shown channel), else by the image's own.
 */
export function previewTiles(
  image: DecodedImage,
  full: PreviewSource = { factor: 1, width: image.width, height: image.height },
  display?: DisplayRange[],
): Uint8Array {
  const planes = shownPlanes(image);
  const stretches = stretchesFor(image, display);
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

function stretchesFor(image: DecodedImage, display: DisplayRange[] | undefined) {
  const ranges = display ?? displayRanges(image);
  if (ranges.length !== Math.min(image.channels, 3)) throw new Error(`${ranges.length} display range(s) for ${Math.min(image.channels, 3)} shown channel(s)`);
  return ranges.map(stretchBetween);
}

/**
 * One rectangle of an image at full resolution, as a tile archive of one level of factor 1 that
 * covers the rectangle alone (index width and height are the rectangle's; tiles of
 * PREVIEW_TILE_SIDE from its corner), stretched by `display`: a fanned-out block's core, which the
 * viewer draws where the pyramid's finest level is coarser than the screen.
 */
export function fullResolutionTiles(image: DecodedImage, rect: { x: number; y: number; width: number; height: number }, display: DisplayRange[]): Uint8Array {
  const planes = shownPlanes(image);
  const stretches = stretchesFor(image, display);
  const columns = Math.ceil(rect.width / PREVIEW_TILE_SIDE);
  const rows = Math.ceil(rect.height / PREVIEW_TILE_SIDE);
  const pngs: Uint8Array[] = [];
  for (let row = 0; row < rows; row++) {
    for (let column = 0; column < columns; column++) {
      const [x0, y0] = [rect.x + column * PREVIEW_TILE_SIDE, rect.y + row * PREVIEW_TILE_SIDE];
      const [x1, y1] = [Math.min(rect.x + rect.width, x0 + PREVIEW_TILE_SIDE), Math.min(rect.y + rect.height, y0 + PREVIEW_TILE_SIDE)];
      const channels = planes.map((p, c) => toBytes(cut(p, image.width, x0, y0, x1, y1), stretches[c]!));
      pngs.push(encodeTile(channels, x1 - x0, y1 - y0));
    }
  }
  const level = { factor: 1, width: rect.width, height: rect.height, columns, rows };
  return writePreviewArchive({ width: rect.width, height: rect.height, tile: PREVIEW_TILE_SIDE, levels: [level] }, [pngs]);
}

/** The rectangle [x0, x1) × [y0, y1) of one planar channel. */
function cut(channel: Float32Array, width: number, x0: number, y0: number, x1: number, y1: number): Float32Array {
  const out = new Float32Array((x1 - x0) * (y1 - y0));
  for (let y = y0; y < y1; y++) out.set(channel.subarray(y * width + x0, y * width + x1), (y - y0) * (x1 - x0));
  return out;
}
