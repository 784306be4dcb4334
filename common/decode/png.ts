// PNG decoding with fast-png: gray, gray+alpha, RGB, RGBA at 1 to 16 bits, and palette images
// (expanded to RGB/RGBA); alpha is dropped (gray + alpha decodes as gray, RGBA as RGB). 16-bit
// label images decode exactly (float32 holds every uint16).
// fast-png inflates the whole image data before looking at its size, so the chunk layout, CRCs
// and the inflated size are checked here first (bounded: inflation stops at the size IHDR gives).
import { decode as decodePngFile, convertIndexedToRgb, hasPngSignature } from "fast-png";
import {
  checkImageSize,
  ImageDecodeError,
  maxInflatedBytes,
  pngInflatedBytes,
  pngEndsWithIend,
  pngWorkingChannels,
  readPngHeader,
  type PngHeader,
} from "../../schema/image-formats/index.ts";
import { crc32 } from "../crc32.ts";
import { selectChannels, type DecodedImage, type DecodeOptions } from "./decoded-image.ts";
import { inflateBounded } from "./inflate-bounded.ts";

export function isPng(bytes: Uint8Array): boolean {
  return bytes.length >= 8 && hasPngSignature(bytes);
}

function pngHeader(bytes: Uint8Array): PngHeader {
  if (bytes.length < 33) throw new ImageDecodeError("PNG truncated: no complete header");
  if (!pngEndsWithIend(bytes.subarray(bytes.length - 8))) throw new ImageDecodeError("PNG truncated: it does not end with an IEND chunk");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(8) !== 13 || view.getUint32(12) !== 0x49484452) throw new ImageDecodeError("PNG corrupt: first chunk is not IHDR");
  return readPngHeader(bytes.subarray(16, 29));
}

/**
 * Walks the chunks (length, type, data, CRC-32 over type and data; ISO 15948 section 5.3) to IEND
 * and inflates the IDAT data, stopping at the size the header gives: a stream that would inflate
 * past it, or falls short of it, is refused before fast-png sees it.
 */
function checkImageData(bytes: Uint8Array, header: PngHeader): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const idat: Uint8Array[] = [];
  let idatBytes = 0;
  let palette = false;
  let at = 8;
  for (;;) {
    if (at + 12 > bytes.length) throw new ImageDecodeError("PNG truncated: it ends before its IEND chunk");
    const length = view.getUint32(at);
    const type = view.getUint32(at + 4);
    if (length > bytes.length - at - 12) throw new ImageDecodeError("PNG truncated: a chunk runs past the end of the file");
    const stored = view.getUint32(at + 8 + length);
    if (crc32(bytes.subarray(at + 4, at + 8 + length)) !== stored) throw new ImageDecodeError(`PNG corrupt: CRC mismatch in chunk at byte ${at}`);
    if (type === 0x504c5445) {
      if (length === 0 || length % 3 !== 0 || length > 3 * 256) throw new ImageDecodeError(`PNG corrupt: a palette of ${length} bytes`);
      palette = true;
    }
    if (type === 0x49444154) {
      if (header.colourType === 3 && !palette) throw new ImageDecodeError("PNG corrupt: a palette image without a palette (PLTE) before its data");
      idat.push(bytes.subarray(at + 8, at + 8 + length));
      idatBytes += length;
    }
    at += 12 + length;
    if (type === 0x49454e44) break;
  }
  const expected = pngInflatedBytes(header);
  if (maxInflatedBytes(8, idatBytes) < expected)
    throw new ImageDecodeError(`PNG truncated: ${idatBytes} bytes of image data cannot hold a ${header.width}x${header.height} image`);
  const stream = new Uint8Array(idatBytes);
  let offset = 0;
  for (const part of idat) {
    stream.set(part, offset);
    offset += part.length;
  }
  const inflated = inflateBounded(stream, expected, "PNG image data");
  if (inflated.length < expected) throw new ImageDecodeError(`PNG truncated: image data inflates to ${inflated.length} of ${expected} bytes`);
}

export function decodePng(bytes: Uint8Array, options: DecodeOptions = {}): DecodedImage {
  const header = pngHeader(bytes);
  checkImageSize(header.width, header.height, pngWorkingChannels(header));
  if ((options.page ?? 0) !== 0) throw new ImageDecodeError(`page ${options.page} does not exist (PNG has 1 page)`);
  checkImageData(bytes, header);
  let png: ReturnType<typeof decodePngFile>;
  try {
    png = decodePngFile(bytes);
  } catch (error) {
    throw new ImageDecodeError(`PNG corrupt or truncated: ${(error as Error).message}`);
  }
  let samples: ArrayLike<number> = png.data;
  let channels = png.channels;
  let stride = channels; // samples per pixel in `samples`
  let depth: number = png.depth;
  if (header.colourType === 3) {
    if (!png.palette) throw new ImageDecodeError("PNG corrupt: a palette image without a palette");
    checkPaletteIndices(png.data as Uint8Array, png.palette.length, png.width * png.height, depth);
    try {
      samples = convertIndexedToRgb(png);
    } catch (error) {
      throw new ImageDecodeError(`PNG corrupt: ${(error as Error).message}`);
    }
    // RGBA when a tRNS chunk gives the palette alpha; the image is its RGB (as the header rule says).
    stride = samples.length / (png.width * png.height);
    channels = 3;
    depth = 8;
  } else if (depth < 8) {
    samples = unpackBits(png.data as Uint8Array, png.width * channels, png.height, depth);
  }
  const { width, height } = png;
  // Alpha, the last sample of gray + alpha and RGBA, is not a channel: it is stepped over.
  channels = header.channels;
  if (width !== header.width || height !== header.height || stride < channels) throw new ImageDecodeError("PNG corrupt: decoded image differs from its header");
  if (samples.length < width * height * stride) throw new ImageDecodeError("PNG truncated: image data is incomplete");
  const wanted = selectChannels(channels, options.channels);
  const data = new Float32Array(wanted.length * width * height);
  const planeSize = width * height;
  for (let k = 0; k < wanted.length; k++) {
    const c = wanted[k]!;
    const base = k * planeSize;
    for (let i = 0; i < planeSize; i++) data[base + i] = samples[i * stride + c]!;
  }
  return { width, height, channels: wanted.length, bitDepth: depth, sampleFormat: "uint", data };
}

/** A palette index past the palette's end (PLTE) has no colour: the file is corrupt. */
function checkPaletteIndices(indices: Uint8Array, paletteSize: number, pixels: number, depth: number): void {
  if (depth === 8) {
    for (let i = 0; i < pixels; i++)
      if (indices[i]! >= paletteSize) throw new ImageDecodeError(`PNG corrupt: palette index ${indices[i]} past the ${paletteSize}-colour palette`);
    return;
  }
  if (paletteSize >= 1 << depth) return; // every index of that depth has a colour
  for (const byte of indices) {
    for (let shift = 8 - depth; shift >= 0; shift -= depth) {
      const index = (byte >> shift) & ((1 << depth) - 1);
      if (index >= paletteSize) throw new ImageDecodeError(`PNG corrupt: palette index ${index} past the ${paletteSize}-colour palette`);
    }
  }
}

/** Expands 1/2/4-bit rows (each padded to a whole byte) to one byte per sample. */
function unpackBits(packed: Uint8Array, samplesPerRow: number, rows: number, depth: number): Uint8Array {
  const out = new Uint8Array(samplesPerRow * rows);
  const rowBytes = Math.ceil((samplesPerRow * depth) / 8);
  const mask = (1 << depth) - 1;
  for (let y = 0; y < rows; y++) {
    for (let i = 0; i < samplesPerRow; i++) {
      const bit = i * depth;
      const byte = packed[y * rowBytes + (bit >> 3)] ?? 0;
      out[y * samplesPerRow + i] = (byte >> (8 - depth - (bit & 7))) & mask;
    }
  }
  return out;
}
