// PNG decoding with fast-png: gray, gray+alpha, RGB, RGBA at 1 to 16 bits, and palette images
// (expanded to RGB/RGBA). 16-bit label images decode exactly (float32 holds every uint16).
import { decode as decodePngFile, convertIndexedToRgb, hasPngSignature } from "fast-png";
import { checkDimensions, ImageDecodeError, selectChannels, type DecodedImage, type DecodeOptions, type ImageProbe } from "./decoded-image.ts";

export function isPng(bytes: Uint8Array): boolean {
  return bytes.length >= 8 && hasPngSignature(bytes);
}

/** Reads width, height, depth and colour type from the IHDR chunk, which must come first. */
export function probePng(bytes: Uint8Array): ImageProbe {
  if (bytes.length < 33) throw new ImageDecodeError("PNG truncated: no complete header");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(12) !== 0x49484452) throw new ImageDecodeError("PNG corrupt: first chunk is not IHDR");
  const width = view.getUint32(16);
  const height = view.getUint32(20);
  const depth = bytes[24]!;
  const colourType = bytes[25]!;
  const channels = ({ 0: 1, 2: 3, 3: 3, 4: 2, 6: 4 } as Record<number, number>)[colourType];
  if (channels === undefined) throw new ImageDecodeError(`PNG corrupt: colour type ${colourType}`);
  return { format: "png", width, height, channels, bitDepth: colourType === 3 ? 8 : depth, sampleFormat: "uint", pages: 1 };
}

export function decodePng(bytes: Uint8Array, options: DecodeOptions = {}): DecodedImage {
  const probe = probePng(bytes);
  checkDimensions(probe.width, probe.height, probe.channels + 1); // +1: room for a palette's alpha
  if ((options.page ?? 0) !== 0) throw new ImageDecodeError(`page ${options.page} does not exist (PNG has 1 page)`);
  let png: ReturnType<typeof decodePngFile>;
  try {
    png = decodePngFile(bytes);
  } catch (error) {
    throw new ImageDecodeError(`PNG corrupt or truncated: ${(error as Error).message}`);
  }
  let samples: ArrayLike<number> = png.data;
  let channels = png.channels;
  let depth: number = png.depth;
  if (png.palette) {
    samples = convertIndexedToRgb(png);
    channels = samples.length / (png.width * png.height);
    depth = 8;
  } else if (depth < 8) {
    samples = unpackBits(png.data as Uint8Array, png.width * channels, png.height, depth);
  }
  const { width, height } = png;
  if (samples.length < width * height * channels) throw new ImageDecodeError("PNG truncated: image data is incomplete");
  const wanted = selectChannels(channels, options.channels);
  const data = new Float32Array(wanted.length * width * height);
  const planeSize = width * height;
  for (let k = 0; k < wanted.length; k++) {
    const c = wanted[k]!;
    const base = k * planeSize;
    for (let i = 0; i < planeSize; i++) data[base + i] = samples[i * channels + c]!;
  }
  return { width, height, channels: wanted.length, bitDepth: depth, sampleFormat: "uint", data };
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
