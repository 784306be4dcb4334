// Limits on what an image may declare, checked against its headers before anything is allocated or
// read, by the worker's upload probe and the engine's decoders alike. Each one bounds memory or
// work that a forged header could otherwise make arbitrarily large; docs/api.md ("What an upload
// may hold") and gpu-runner/engine/README.md list them.
import { ImageDecodeError } from "./errors.ts";

/**
 * Largest decoded plane, in samples (width × height × channels): 2^28 float32 samples are 1 GiB,
 * a 16384² single-channel or an 8192² four-channel image.
 */
export const MAX_SAMPLES = 2 ** 28;

/** Image file directories (pages) in one TIFF; also ends a chain that loops through new offsets. */
export const MAX_TIFF_DIRECTORIES = 65_536;

/** Entries in one TIFF directory (real files have a few dozen; a BigTIFF count is 64 bits). */
export const MAX_TIFF_ENTRIES = 4096;

/** Values of one tag the readers use (strip/tile offsets and byte counts: one per data block). */
export const MAX_TIFF_TAG_VALUES = 2 ** 20;

/**
 * Bytes of an ImageDescription or XMP packet read: OME-XML's Pixels element and ImageJ's fields come
 * first, but a Philips slide's XML carries its label and macro images in base64 before its pixel
 * spacing, a few megabytes.
 */
export const MAX_TIFF_DESCRIPTION_BYTES = 4 * 1024 * 1024;

/**
 * Decoded bytes of one strip or tile: at most four times its page's pixel bytes, or 16 MiB, which
 * admits the usual 256² or 512² tiles on a small image (libtiff's default tile is 256²) but not a
 * 32768² tile on a 1×1 image.
 */
export function maxBlockBytes(pageBytes: number): number {
  return Math.max(4 * pageBytes, 16 * 1024 * 1024);
}

/**
 * Reading by region (common/decode/region-reader.ts) lifts MAX_SAMPLES from the image
 * and bounds each piece instead. Decoded bytes of one strip or tile read for a region, and stored
 * bytes of one compressed block: 256 MiB holds a 8192² tile of 32-bit floats or a 16384-wide RGB
 * strip of 5461 rows (tiled writers use 256² to 1024² tiles). Uncompressed blocks are read a row
 * at a time, so there the bound is on one row of a block.
 */
export const MAX_TIFF_BLOCK_BYTES = 256 * 1024 * 1024;

/** Bytes of one row of a PNG read by region (rows are decoded one after another): 8 Mi pixels of 16-bit RGBA. */
export const MAX_PNG_ROW_BYTES = 64 * 1024 * 1024;

/** Samples (width × height × channels) of one region request: the size of one decoded image. */
export const MAX_REGION_SAMPLES = MAX_SAMPLES;

/**
 * A format that cannot be read by region (JPEG, interlaced PNG) is read and decoded whole by the
 * region reader, under MAX_SAMPLES, when its file is at most this size.
 */
export const MAX_WHOLE_READ_BYTES = 1024 * 1024 * 1024;

/** Throws unless width and height are positive integers and `channels` a positive count; no size cap. */
export function checkImageDimensions(width: number, height: number, channels: number): void {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
    throw new ImageDecodeError(`invalid image size ${width}x${height}`);
  }
  if (!Number.isInteger(channels) || channels < 1) throw new ImageDecodeError(`invalid channel count ${channels}`);
}

/**
 * Samples (width × height × channels) of an image read by region and segmented block by block.
 * Segmenting costs time in proportion to pixels, and a small compressed file can declare a vast
 * image, so this is refused before any work: 2^35 holds a 100,000 × 100,000 RGB whole slide.
 */
export const MAX_REGION_IMAGE_SAMPLES = 2 ** 35;

/** Throws unless width × height × channels is a positive size within MAX_REGION_IMAGE_SAMPLES (an image read by region). */
export function checkRegionImageSize(width: number, height: number, channels: number): void {
  checkImageDimensions(width, height, channels);
  if (width * height * channels > MAX_REGION_IMAGE_SAMPLES) {
    throw new ImageDecodeError(
      `image too large: ${width}x${height}x${channels} exceeds ${MAX_REGION_IMAGE_SAMPLES} samples, the most one segmentation reads`,
      "too-large",
    );
  }
}

/** Throws unless width × height × channels is a positive size within MAX_SAMPLES. */
export function checkImageSize(width: number, height: number, channels: number): void {
  checkImageDimensions(width, height, channels);
  if (width * height * channels > MAX_SAMPLES) {
    throw new ImageDecodeError(`image too large: ${width}x${height}x${channels} exceeds ${MAX_SAMPLES} samples`, "too-large");
  }
}

/**
 * The most bytes `inputBytes` of compressed data can decode to with TIFF compression `compression`
 * (also PNG's, which is Deflate): Deflate at most 1032:1 (a 258-byte match per 2-bit code, RFC 1951),
 * TIFF LZW one string of at most 4096 bytes per code of at least 9 bits, PackBits 128 bytes per
 * two, JPEG 2048 per byte, JPEG 2000 without a bound. A block or stream shorter than its decoded size allows is truncated or forged, which a
 * reader can tell before allocating anything.
 */
export function maxInflatedBytes(compression: number, inputBytes: number): number {
  switch (compression) {
    case 1:
      return inputBytes;
    case 5:
      return 4096 * (Math.floor((8 * inputBytes) / 9) + 1);
    case 7:
      // JPEG: every 8x8 block of the full-resolution component costs at least one bit (its DC
      // code), and a pixel has at most 4 samples: 64 × 4 bytes per bit.
      return 2048 * (inputBytes + 1);
    case 32773:
      return 64 * (inputBytes + 2);
    case 33003:
    case 33005:
    case 34712:
      // JPEG 2000 has no such floor: a blank 1024² RGB tile codes in under 200 bytes. Its decoding
      // work follows the tile's declared size (checked against the page's before decoding) and the
      // stored bytes, both bounded already.
      return Number.POSITIVE_INFINITY;
    default:
      return 1032 * (inputBytes + 1);
  }
}

/**
 * The out-of-line values of one TIFF directory's tags, added up, fit in the file: writers store
 * each value apart, so more means tags share bytes, the way a forged file makes a few kilobytes
 * claim gigabytes of values.
 */
export function checkTiffValueBytes(totalBytes: number, fileSize: number): void {
  if (totalBytes > fileSize) {
    throw new ImageDecodeError(`TIFF corrupt: a directory's tag values claim ${totalBytes} bytes, more than the ${fileSize}-byte file holds`);
  }
}
