// A TIFF page's strips or tiles, shared by the whole-image decoder (tiff.ts) and the region reader
// (tiff-regions.ts): where each block lies, how its stored bytes decode (codec, then predictor), and
// how its pixels land in a planar float image of any rectangle of the page.
import {
  Compression,
  describeTiffPage,
  ImageDecodeError,
  type DescribeOptions,
  type PageLayout,
  type SampleFormat,
  Tag,
  type TiffPage,
  type TiffTags,
  checkJpegTablesWork,
  checkTiffStoredBytes,
  compactJpegTables,
  isJpeg2000Compression,
  tiffBlockBytes,
  tiffStoredBytes,
} from "../../schema/image-formats/index.ts";
import { decompress } from "./tiff-codecs.ts";
import { decodeJpegTile, decodeRestartTile } from "./jpeg-tile.ts";
import { decodeJpeg2000Tile } from "./jpeg2000-tile.ts";
import { undoPredictor } from "./tiff-predictor.ts";

/** A page's geometry (schema/image-formats' rules) and where its data blocks lie. */
export interface PageInfo extends TiffPage {
  offsets: readonly number[];
  byteCounts: readonly number[] | undefined;
  /** JPEGTables: the tables every JPEG block of the page shares, read once and reduced to one of each (compactJpegTables). */
  jpegTables: Uint8Array | undefined;
  /** An NDPI page read by restart intervals: the header each block's entropy-coded data is decoded behind. */
  jpegHeader: Uint8Array | undefined;
  littleEndian: boolean;
}

export function pageInfo(tags: TiffTags & { jpegHeader?: Uint8Array }, index: number, littleEndian: boolean, options?: DescribeOptions): PageInfo {
  const page = describeTiffPage(tags, index, options);
  const offsets = tags.numbers(page.tiled ? Tag.TileOffsets : Tag.StripOffsets)!;
  const byteCounts = tags.numbers(page.tiled ? Tag.TileByteCounts : Tag.StripByteCounts);
  const tables = page.compression === Compression.Jpeg ? tags.numbers(Tag.JpegTables) : undefined;
  return { ...page, offsets, byteCounts, jpegTables: tables ? compactJpegTables(tables) : undefined, jpegHeader: tags.jpegHeader, littleEndian };
}

/**
 * The stored bytes of the compressed blocks of every page a reader has described, each page counted
 * once, held to the file's size (checkTiffStoredBytes) before any of their blocks is decoded: so the
 * work of decoding is bounded by the file whatever its offsets say. The JPEG tables put in front of
 * each block are counted too, tables x blocks, against the file and an allowance (checkJpegTablesWork).
 */
export class StoredBytesTally {
  private readonly fileSize: number;
  private readonly counted = new Set<number>();
  private total = 0;
  private tables = 0;
  constructor(fileSize: number) {
    this.fileSize = fileSize;
  }
  add(page: number, info: PageInfo): void {
    if (this.counted.has(page)) return;
    this.counted.add(page);
    this.total += tiffStoredBytes(info, info.byteCounts);
    checkTiffStoredBytes(this.total, this.fileSize);
    this.tables += (info.jpegTables?.length ?? 0) * info.blocks;
    checkJpegTablesWork(this.tables, this.fileSize);
  }
}

/** The channels a decode asks for, grouped by the page holding them (OME/ImageJ keep one channel per page). */
interface PageSamples {
  page: number;
  /** Sample within the page's pixels, and the output channel it goes to. */
  samples: { sample: number; target: number }[];
}

export function samplesByPage(layout: PageLayout, plane: number, samplesPerPixel: number, wanted: readonly number[], pageCount: number): PageSamples[] {
  const byPage = new Map<number, PageSamples>();
  wanted.forEach((channel, target) => {
    const page = layout.pageOf(plane, Math.floor(channel / samplesPerPixel));
    if (page >= pageCount) throw new ImageDecodeError(`TIFF page ${page} is missing`);
    const entry = byPage.get(page) ?? { page, samples: [] };
    entry.samples.push({ sample: channel % samplesPerPixel, target });
    byPage.set(page, entry);
  });
  return [...byPage.values()];
}

/** Every page holding a channel must match the page that defines the image's geometry. */
export function checkSameLayout(info: TiffPage, geometry: TiffPage, page: number): void {
  if (
    info.width !== geometry.width ||
    info.height !== geometry.height ||
    info.samplesPerPixel !== geometry.samplesPerPixel ||
    info.bitsPerSample !== geometry.bitsPerSample
  ) {
    throw new ImageDecodeError(`TIFF page ${page} differs in size or sample layout from the other channels`);
  }
}

/** Blocks across and down one plane of the page. */
export function blockGrid(info: TiffPage): { across: number; down: number; perPlane: number } {
  const across = Math.ceil(info.width / info.blockWidth);
  const down = Math.ceil(info.height / info.blockHeight);
  return { across, down, perPlane: across * down };
}

/** Samples of one pixel inside a block: all of them (chunky), or one (planar: a block per sample). */
export function samplesInBlock(info: TiffPage): number {
  return info.planar ? 1 : info.samplesPerPixel;
}

/** Rows of data block `by` holds: strips at the bottom hold only the rows left, tiles are always full. */
function rowsInBlock(info: TiffPage, by: number): number {
  return info.tiled ? info.blockHeight : Math.min(info.blockHeight, info.height - by * info.blockHeight);
}

/**
 * Decodes block `index` from its stored bytes to its pixels, predictor undone: at least the block's
 * expected bytes (tiffBlockBytes), interleaved samples, `blockWidth` pixels per row. `stored` is
 * not modified.
 */
export function decodeBlock(info: PageInfo, index: number, stored: Uint8Array): Uint8Array {
  const { full, expected } = tiffBlockBytes(info, index);
  const by = Math.floor((index % blockGrid(info).perPlane) / blockGrid(info).across);
  const rows = rowsInBlock(info, by);
  const spp = samplesInBlock(info);
  let block: Uint8Array;
  if (info.compression === Compression.None) {
    if (stored.length < expected) throw new ImageDecodeError(`TIFF truncated: data block ${index} has ${stored.length} of ${expected} bytes`);
    // Predictors work in place, so never hand out a view of the caller's bytes.
    block = info.predictor === 1 ? stored.subarray(0, expected) : stored.slice(0, expected);
  } else if (info.compression === Compression.Jpeg) {
    // Photometric YCbCr (6) is converted; RGB (2) is RGB already.
    const shape = { what: "TIFF JPEG block", columns: info.blockWidth, rows, maxRows: info.blockHeight, samples: spp, ycbcr: info.photometric === 6 };
    return info.jpegHeader ? decodeRestartTile(stored, info.jpegHeader, shape) : decodeJpegTile(stored, info.jpegTables, shape);
  } else if (isJpeg2000Compression(info.compression)) {
    // Aperio's 33005 codes RGB through the codestream's transform, 33003 Y, Cb and Cr as they are; 34712 follows the page's photometric.
    const ycbcr = info.compression === Compression.Jpeg2000Ycbcr || (info.compression === Compression.Jpeg2000 && info.photometric === 6);
    const shape = { what: "TIFF JPEG 2000 block", columns: info.blockWidth, rows, maxRows: info.blockHeight, samples: spp, ycbcr };
    return decodeJpeg2000Tile(stored, shape);
  } else {
    block = decompress(info.compression, stored, expected, full);
  }
  undoPredictor(info.predictor, block, info.blockWidth, rows, spp, info.bitsPerSample / 8, info.littleEndian);
  return block;
}

/** Decoded pixels of part of a block: `columns × rows` pixels whose first is image pixel (x0, y0). */
export interface Pixels {
  bytes: Uint8Array;
  x0: number;
  y0: number;
  columns: number;
  rows: number;
  /** Bytes from one row to the next. */
  rowStride: number;
}

/** The whole of decoded block `index`. */
export function blockPixels(info: TiffPage, index: number, bytes: Uint8Array): Pixels {
  const { across, perPlane } = blockGrid(info);
  const within = index % perPlane;
  const by = Math.floor(within / across);
  const bx = within % across;
  const rowStride = info.blockWidth * samplesInBlock(info) * (info.bitsPerSample / 8);
  return { bytes, x0: bx * info.blockWidth, y0: by * info.blockHeight, columns: info.blockWidth, rows: rowsInBlock(info, by), rowStride };
}

/** A rectangle of the page: the image a decode fills, planar [C, height, width]. */
export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

type SampleReader = (view: DataView, at: number) => number;

function sampleReader(bits: number, format: SampleFormat, le: boolean): SampleReader {
  if (format === "float") return bits === 32 ? (v, at) => v.getFloat32(at, le) : (v, at) => v.getFloat64(at, le);
  if (format === "int") {
    if (bits === 8) return (v, at) => v.getInt8(at);
    return bits === 16 ? (v, at) => v.getInt16(at, le) : (v, at) => v.getInt32(at, le);
  }
  if (bits === 8) return (v, at) => v.getUint8(at);
  return bits === 16 ? (v, at) => v.getUint16(at, le) : (v, at) => v.getUint32(at, le);
}

/**
 * Copies the pixels that fall inside `rect` (and the page) into `out`, the planar float image of
 * `rect`: each listed sample to its target channel. For planar pages the block holds one sample,
 * the one listed.
 */
export function copyPixels(info: PageInfo, pixels: Pixels, samples: readonly { sample: number; target: number }[], rect: Rect, out: Float32Array): void {
  const xs = Math.max(rect.x, pixels.x0);
  const xe = Math.min(rect.x + rect.width, pixels.x0 + pixels.columns, info.width);
  const ys = Math.max(rect.y, pixels.y0);
  const ye = Math.min(rect.y + rect.height, pixels.y0 + pixels.rows, info.height);
  if (xs >= xe || ys >= ye) return;
  const spp = samplesInBlock(info);
  const bytesPerSample = info.bitsPerSample / 8;
  const step = spp * bytesPerSample;
  const read = sampleReader(info.bitsPerSample, info.sampleFormat, info.littleEndian);
  const whiteLevel = info.whiteIsZero && info.sampleFormat === "uint" ? 2 ** info.bitsPerSample - 1 : -1;
  const view = new DataView(pixels.bytes.buffer, pixels.bytes.byteOffset, pixels.bytes.byteLength);
  const planeSize = rect.width * rect.height;
  for (const { sample, target } of samples) {
    const sampleIndex = info.planar ? 0 : sample;
    const base = target * planeSize;
    for (let y = ys; y < ye; y++) {
      let at = (y - pixels.y0) * pixels.rowStride + ((xs - pixels.x0) * spp + sampleIndex) * bytesPerSample;
      let o = base + (y - rect.y) * rect.width + (xs - rect.x);
      for (let x = xs; x < xe; x++, at += step, o++) {
        const value = read(view, at);
        out[o] = whiteLevel >= 0 ? whiteLevel - value : value;
      }
    }
  }
}
