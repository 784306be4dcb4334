// Hamamatsu NDPI, as tifffile and OpenSlide's hamamatsu driver read it (Hamamatsu publishes no
// specification):
// - A little-endian classic TIFF with 64-bit extensions of its own. The header's first-directory
//   offset takes 8 bytes; so does each directory's next offset, and after it come 4 bytes per
//   entry: the high half of that entry's value or offset. Files past 4 GiB rely on them.
// - Each page is one JPEG strip. A large level is a single JPEG too large for a decoder to hold,
//   written with restart markers. McuStarts lists where each restart interval's entropy-coded data
//   starts in the strip. An interval decodes on its own (the DC predictions restart), so the strip
//   is read as tiles: one MCU row high, a whole number of intervals wide, each decoded behind the
//   JPEG's own header with the frame's size set to the tile's.
// - SourceLens is a page's objective: a pyramid level's magnification, -1 the macro image, -2 the
//   map. ZOffsetFromSlideCenter tells a z-stack's focal planes apart: 0 is the one in focus.
import { ImageDecodeError } from "./errors.ts";
import type { PageSize } from "./tiff-slides.ts";

/** Bytes before the first restart interval: the JPEG's header (tables, frame, scan) with any APPn. */
export const MAX_NDPI_JPEG_HEADER_BYTES = 1024 * 1024;

/** The width a restart tile is grown to, by whole intervals: wide enough that its header costs little, narrow enough to read a region without much more. */
const NDPI_TILE_WIDTH = 1024;

/**
 * Bytes of header a restart tile may carry per pixel it decodes. Every tile is decoded behind the
 * header (tables, frame and scan), so a file of tiny intervals would spend its work parsing
 * headers: real files carry about 0.1 byte per pixel (600 bytes before a 1024 x 8 tile); a row
 * that cannot be cut into tiles of more than a few MCUs is refused.
 */
const MAX_NDPI_HEADER_BYTES_PER_PIXEL = 2;

/** What a restart-marked JPEG's header states: its MCU, and the MCUs of one interval. */
interface RestartJpeg {
  mcuWidth: number;
  mcuHeight: number;
  interval: number;
  /** Bytes of the header each tile is decoded behind. */
  headerBytes: number;
}

/** A page's JPEG read as tiles of whole restart intervals, by rows of MCUs. */
export interface RestartTiling {
  tileWidth: number;
  tileHeight: number;
  intervalsPerTile: number;
  across: number;
  down: number;
}

/**
 * How a `width × height` page whose JPEG restarts every `interval` MCUs is cut into tiles, given
 * `starts` listed intervals. Refused when the intervals do not tile its rows (an interval crossing a
 * row's end would need its neighbours to decode), when fewer are listed than the JPEG holds, or
 * when the header repeated before each tile outweighs it.
 */
export function restartTiling(page: PageSize, jpeg: RestartJpeg, starts: number): RestartTiling {
  const { mcuWidth, mcuHeight, interval, headerBytes } = jpeg;
  const mcusAcross = Math.ceil(page.width / mcuWidth);
  if (!(interval >= 1) || mcusAcross % interval !== 0) {
    throw new ImageDecodeError(`NDPI image: its JPEG restarts every ${interval} MCUs, which does not divide a row of ${mcusAcross}`, "unsupported");
  }
  const rowIntervals = mcusAcross / interval;
  let intervalsPerTile = 1;
  for (let n = 1; n <= rowIntervals && n * interval * mcuWidth <= NDPI_TILE_WIDTH; n++) if (rowIntervals % n === 0) intervalsPerTile = n;
  const down = Math.ceil(page.height / mcuHeight);
  if (starts < rowIntervals * down) {
    throw new ImageDecodeError(`NDPI image: ${starts} restart intervals listed, ${rowIntervals * down} needed`);
  }
  const tileWidth = intervalsPerTile * interval * mcuWidth;
  // A JPEG frame states its width in 16 bits.
  if (tileWidth > 0xffff)
    throw new ImageDecodeError(`NDPI image: a restart interval ${tileWidth} pixels wide is wider than a JPEG frame can state`, "unsupported");
  if (headerBytes > MAX_NDPI_HEADER_BYTES_PER_PIXEL * tileWidth * mcuHeight) {
    throw new ImageDecodeError(
      `NDPI image: a ${headerBytes}-byte JPEG header before each ${tileWidth}x${mcuHeight} tile is more than ${MAX_NDPI_HEADER_BYTES_PER_PIXEL} bytes per pixel`,
    );
  }
  return { tileWidth, tileHeight: mcuHeight, intervalsPerTile, across: rowIntervals / intervalsPerTile, down };
}

/** What an NDPI page is, by its SourceLens and focal plane. */
function ndpiPageRole(sourceLens: number | undefined, zOffset: number | undefined): "level" | "associated" | "other plane" {
  if (sourceLens === undefined || !(sourceLens > 0)) return "associated";
  return (zOffset ?? 0) === 0 ? "level" : "other plane";
}

/** An NDPI page as the slide reader sees it. */
export interface NdpiPage extends PageSize {
  page: number;
  sourceLens: number | undefined;
  zOffset: number | undefined;
}

/**
 * The slide an NDPI holds: its levels are the pages of the focal plane in focus with an objective
 * (OpenSlide's rule), the largest the full resolution and its SourceLens the magnification; the
 * macro and map pages are never levels. Null when no page is a level.
 */
export function hamamatsuSlide(pages: readonly NdpiPage[]): { page: number; levels: (PageSize & { page: number })[]; magnification: number | null } | null {
  const levels = pages.filter((p) => ndpiPageRole(p.sourceLens, p.zOffset) === "level").sort((a, b) => b.width * b.height - a.width * a.height);
  const [full, ...reduced] = levels;
  if (!full) return null;
  return { page: full.page, levels: reduced.map(({ width, height, page }) => ({ width, height, page })), magnification: full.sourceLens ?? null };
}
