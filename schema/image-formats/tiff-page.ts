// What one TIFF page's tags say about its pixels, and whether the readers can decode them: the
// rules the worker's probe and the engine's decoder apply to the same tags, so an upload the probe
// accepts is one the engine decodes (short of damage in the pixel data itself).
import { ImageDecodeError } from "./errors.ts";
import { checkJpegTablesSize } from "./jpeg-tables.ts";
import { checkImageSize, checkRegionImageSize, MAX_TIFF_BLOCK_BYTES, MAX_TIFF_TAG_VALUES, maxBlockBytes, maxInflatedBytes } from "./limits.ts";
import { Compression, COMPRESSION_NAMES, isJpeg2000Compression, SAMPLE_FORMATS, Tag, type SampleFormat, unsupportedCompression } from "./tiff-tags.ts";

/** A directory's tags as the readers hold them: numbers (possibly only the first few) and their count. */
export interface TiffTags {
  numbers(tag: number): readonly number[] | undefined;
  /** How many values the tag declares (0 when absent), even where fewer were read. */
  count(tag: number): number;
}

export interface TiffPage {
  width: number;
  height: number;
  samplesPerPixel: number;
  bitsPerSample: number;
  sampleFormat: SampleFormat;
  compression: number;
  predictor: number;
  planar: boolean;
  /** 0 white is zero, 1 black is zero, 2 RGB, 6 YCbCr (JPEG-compressed only: the JPEG decoder converts it to RGB). */
  photometric: number;
  whiteIsZero: boolean;
  tiled: boolean;
  /** Strips are blocks as wide as the image. */
  blockWidth: number;
  blockHeight: number;
  /** Data blocks the page needs (each listed in the offsets tag). */
  blocks: number;
}

function numberOf(tags: TiffTags, tag: number, index: number, fallback?: number): number {
  const value = tags.numbers(tag)?.[0] ?? fallback;
  if (value === undefined) throw new ImageDecodeError(`TIFF page ${index} is missing required tag ${tag}`);
  return value;
}

export interface DescribeOptions {
  /**
   * Reading by region: the page may hold more than MAX_SAMPLES (up to MAX_REGION_IMAGE_SAMPLES); each block read must then fit in
   * MAX_TIFF_BLOCK_BYTES (a row of it, for uncompressed blocks, which are read by rows).
   */
  regions?: boolean;
}

export function describeTiffPage(tags: TiffTags, index: number, options: DescribeOptions = {}): TiffPage {
  const width = numberOf(tags, Tag.ImageWidth, index);
  const height = numberOf(tags, Tag.ImageLength, index);
  const samplesPerPixel = numberOf(tags, Tag.SamplesPerPixel, index, 1);
  if (options.regions) checkRegionImageSize(width, height, samplesPerPixel);
  else checkImageSize(width, height, samplesPerPixel);
  const bits = tags.numbers(Tag.BitsPerSample) ?? [1];
  const bitsPerSample = bits[0]!;
  if (bits.some((b) => b !== bitsPerSample)) throw new ImageDecodeError(`TIFF page ${index}: mixed bits per sample are not supported`, "unsupported");
  const formatCode = numberOf(tags, Tag.SampleFormat, index, 1);
  const sampleFormat = SAMPLE_FORMATS[formatCode as keyof typeof SAMPLE_FORMATS];
  if (!sampleFormat) throw new ImageDecodeError(`TIFF page ${index}: sample format ${formatCode} is not supported`, "unsupported");
  const supported = sampleFormat === "float" ? bitsPerSample === 32 || bitsPerSample === 64 : [8, 16, 32].includes(bitsPerSample);
  if (!supported) throw new ImageDecodeError(`TIFF page ${index}: ${bitsPerSample}-bit ${sampleFormat} samples are not supported`, "unsupported");
  const photometric = numberOf(tags, Tag.Photometric, index, 1);
  const compression = numberOf(tags, Tag.Compression, index, 1);
  const jpeg = compression === Compression.Jpeg;
  const jpeg2000 = isJpeg2000Compression(compression);
  const planarCode = numberOf(tags, Tag.PlanarConfiguration, index, 1);
  if (photometric === 3) throw new ImageDecodeError(`TIFF page ${index}: palette-colour images are not supported`, "unsupported");
  // YCbCr only inside JPEG and JPEG 2000 blocks, whose decoders convert it (uncompressed YCbCr is subsampled by a layout of its own).
  const ycbcr = photometric === 6 && (jpeg || jpeg2000) && samplesPerPixel === 3 && planarCode !== 2;
  if (photometric > 2 && !ycbcr) throw new ImageDecodeError(`TIFF page ${index}: photometric interpretation ${photometric} is not supported`, "unsupported");
  if (!COMPRESSION_NAMES[compression]) {
    throw new ImageDecodeError(unsupportedCompression(compression), "unsupported");
  }
  if ((jpeg || jpeg2000) && (bitsPerSample !== 8 || sampleFormat !== "uint" || (planarCode !== 2 && samplesPerPixel !== 1 && samplesPerPixel !== 3))) {
    throw new ImageDecodeError(
      `TIFF page ${index}: ${COMPRESSION_NAMES[compression]} compression of ${samplesPerPixel} ${bitsPerSample}-bit ${sampleFormat} samples is not supported`,
      "unsupported",
    );
  }
  if (jpeg) checkJpegTablesSize(tags.count(Tag.JpegTables), index);
  // A predictor means nothing to JPEG data (libtiff ignores it there too).
  const predictor = jpeg || jpeg2000 ? 1 : numberOf(tags, Tag.Predictor, index, 1);
  if (![1, 2, 3].includes(predictor)) throw new ImageDecodeError(`TIFF predictor ${predictor} is not supported`, "unsupported");

  const tiled = tags.count(Tag.TileWidth) > 0;
  const blockWidth = tiled ? numberOf(tags, Tag.TileWidth, index) : width;
  const blockHeight = tiled ? numberOf(tags, Tag.TileLength, index) : Math.min(numberOf(tags, Tag.RowsPerStrip, index, height), height);
  if (!(Number.isInteger(blockWidth) && Number.isInteger(blockHeight) && blockWidth >= 1 && blockHeight >= 1)) {
    throw new ImageDecodeError(`TIFF page ${index}: invalid strip or tile size ${blockWidth}x${blockHeight}`);
  }
  const planar = planarCode === 2 && samplesPerPixel > 1;
  const bytesPerSample = bitsPerSample / 8;
  const pageBytes = width * height * samplesPerPixel * bytesPerSample;
  const rowBytes = blockWidth * (planar ? 1 : samplesPerPixel) * bytesPerSample;
  const blockBytes = rowBytes * blockHeight;
  if (blockBytes > maxBlockBytes(pageBytes)) {
    throw new ImageDecodeError(
      `TIFF page ${index}: a ${blockWidth}x${blockHeight} ${tiled ? "tile" : "strip"} is far larger than the ${width}x${height} image`,
    );
  }
  if (options.regions && (compression === Compression.None ? rowBytes : blockBytes) > MAX_TIFF_BLOCK_BYTES) {
    const what = compression === Compression.None ? `a row of a ${blockWidth}-pixel-wide block` : `a ${blockWidth}x${blockHeight} ${tiled ? "tile" : "strip"}`;
    throw new ImageDecodeError(`TIFF page ${index}: ${what} decodes to more than the ${MAX_TIFF_BLOCK_BYTES} bytes a region read allows`, "too-large");
  }
  const blocks = Math.ceil(width / blockWidth) * Math.ceil(height / blockHeight) * (planar ? samplesPerPixel : 1);
  if (blocks > MAX_TIFF_TAG_VALUES) {
    throw new ImageDecodeError(`TIFF page ${index} is cut into ${blocks} strips or tiles, more than the ${MAX_TIFF_TAG_VALUES} allowed`, "too-large");
  }
  const offsetsTag = tiled ? Tag.TileOffsets : Tag.StripOffsets;
  const countsTag = tiled ? Tag.TileByteCounts : Tag.StripByteCounts;
  if (tags.count(offsetsTag) < blocks) throw new ImageDecodeError(`TIFF page ${index}: ${tags.count(offsetsTag)} data blocks listed, ${blocks} needed`);
  const counts = tags.count(countsTag);
  if (counts === 0 && compression !== 1) throw new ImageDecodeError(`TIFF page ${index} is missing strip or tile byte counts`);
  if (counts > 0 && counts < blocks) throw new ImageDecodeError(`TIFF page ${index}: ${counts} byte counts listed, ${blocks} needed`);
  return {
    width,
    height,
    samplesPerPixel,
    bitsPerSample,
    sampleFormat,
    compression,
    predictor,
    planar,
    photometric,
    whiteIsZero: photometric === 0,
    tiled,
    blockWidth,
    blockHeight,
    blocks,
  };
}

/** Decoded bytes of a full block, and of block `index` (a bottom strip holds only the rows left). */
export function tiffBlockBytes(page: TiffPage, index: number): { full: number; expected: number } {
  const full = page.blockWidth * page.blockHeight * (page.planar ? 1 : page.samplesPerPixel) * (page.bitsPerSample / 8);
  if (page.tiled) return { full, expected: full };
  const across = Math.ceil(page.width / page.blockWidth);
  const down = Math.ceil(page.height / page.blockHeight);
  const row = Math.floor((index % (across * down)) / across);
  const rows = Math.min(page.blockHeight, page.height - row * page.blockHeight);
  return { full, expected: (full / page.blockHeight) * rows };
}

/**
 * Checks that block `index`, `count` bytes at `offset`, lies inside a file of `fileSize` bytes and
 * is long enough to decode to its pixels at the codec's best ratio; uncompressed files may omit
 * byte counts (`count` undefined), the size then follows from the geometry.
 */
export function checkTiffBlock(page: TiffPage, pageIndex: number, index: number, offset: number, count: number | undefined, fileSize: number): number {
  const { expected } = tiffBlockBytes(page, index);
  const bytes = count ?? expected;
  if (!(Number.isSafeInteger(offset) && Number.isSafeInteger(bytes)) || offset < 0 || bytes < 0 || offset + bytes > fileSize) {
    throw new ImageDecodeError(
      `TIFF truncated: page ${pageIndex} data block ${index} (${bytes} bytes at ${offset}) lies past the end of the file (${fileSize} bytes)`,
    );
  }
  if (maxInflatedBytes(page.compression, bytes) < expected) {
    throw new ImageDecodeError(`TIFF truncated or corrupt: page ${pageIndex} data block ${index} has ${bytes} bytes, too few to decode to ${expected}`);
  }
  return bytes;
}

/**
 * The stored bytes of a page's compressed strips or tiles, added up (0 for an uncompressed page).
 * Decoding a compressed block costs time in proportion to its stored bytes as well as its pixels
 * (LZW clear codes, empty Deflate blocks and PackBits no-ops decode to nothing), and nothing in the
 * format stops many blocks from naming the same bytes: 64 strips naming one 22.5 MB run of clear
 * codes cost 64 readings of it. Uncompressed blocks are read only as far as their pixels, so they
 * may share bytes (a blank tile stored once).
 */
export function tiffStoredBytes(page: TiffPage, byteCounts: readonly number[] | undefined): number {
  if (page.compression === Compression.None || !byteCounts) return 0;
  let total = 0;
  for (let b = 0; b < page.blocks; b++) total += byteCounts[b] ?? 0;
  return total;
}

/**
 * The compressed blocks a reader decodes, all pages together, fit in the file: a writer stores
 * each block once, so more means blocks share their bytes, and the work of decoding them would
 * grow with blocks x file size instead of with the file. Checked before any block is decoded.
 */
export function checkTiffStoredBytes(totalBytes: number, fileSize: number): void {
  if (totalBytes > fileSize) {
    throw new ImageDecodeError(
      `TIFF corrupt: its compressed strips or tiles claim ${totalBytes} bytes, more than the ${fileSize}-byte file holds (blocks that share their bytes)`,
    );
  }
}
