// PNG header rules (ISO 15948 / RFC 2083): channels of each colour type, the bit depths each one
// allows, and the size of the filtered image data the IDAT stream must inflate to.
import { ImageDecodeError } from "./errors.ts";

/**
 * Channels a decoded PNG has: alpha is not a channel (it says how opaque a pixel is drawn, not what
 * the microscope measured), so gray + alpha is gray and RGBA is RGB; a palette image is expanded to
 * RGB (a tRNS alpha is dropped too).
 */
const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 3: 3, 4: 1, 6: 3 };
const DEPTHS: Record<number, number[]> = { 0: [1, 2, 4, 8, 16], 2: [8, 16], 3: [1, 2, 4, 8], 4: [8, 16], 6: [8, 16] };
/** Samples per pixel as stored (a palette index is one sample). */
const STORED_SAMPLES: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };

export interface PngHeader {
  width: number;
  height: number;
  bitDepth: number;
  colourType: number;
  interlaced: boolean;
  /** Channels of the decoded image (palette expanded to RGB). */
  channels: number;
  /** Bit depth of the decoded samples (8 for palette images). */
  sampleBits: number;
}

/** Reads IHDR's 13 data bytes; throws on a colour type / depth pair the specification forbids. */
export function readPngHeader(ihdr: Uint8Array): PngHeader {
  const view = new DataView(ihdr.buffer, ihdr.byteOffset, ihdr.byteLength);
  const width = view.getUint32(0);
  const height = view.getUint32(4);
  const bitDepth = ihdr[8]!;
  const colourType = ihdr[9]!;
  const interlace = ihdr[12]!;
  const channels = CHANNELS[colourType];
  if (channels === undefined || !DEPTHS[colourType]!.includes(bitDepth)) {
    throw new ImageDecodeError(`PNG has an invalid colour type ${colourType} / bit depth ${bitDepth}`);
  }
  if (interlace > 1) throw new ImageDecodeError(`PNG has an unknown interlace method ${interlace}`);
  // Method 0 (Deflate; adaptive filtering with five filter types) is the only one defined.
  if (ihdr[10] !== 0) throw new ImageDecodeError(`PNG has an unknown compression method ${ihdr[10]}`);
  if (ihdr[11] !== 0) throw new ImageDecodeError(`PNG has an unknown filter method ${ihdr[11]}`);
  return { width, height, bitDepth, colourType, interlaced: interlace === 1, channels, sampleBits: colourType === 3 ? 8 : bitDepth };
}

// Adam7 passes: [x0, y0, dx, dy].
const ADAM7 = [
  [0, 0, 8, 8],
  [4, 0, 8, 8],
  [0, 4, 4, 8],
  [2, 0, 4, 4],
  [0, 2, 2, 4],
  [1, 0, 2, 2],
  [0, 1, 1, 2],
] as const;

/** Samples per pixel as the file stores them (a palette index is one sample). */
export function pngStoredSamples(header: PngHeader): number {
  return STORED_SAMPLES[header.colourType]!;
}

/** Bytes of one row of `pixels` pixels, without its filter byte. */
export function pngRowBytes(header: PngHeader, pixels = header.width): number {
  return Math.ceil((pixels * pngStoredSamples(header) * header.bitDepth) / 8);
}

/** Bytes the image data inflates to: each row of each pass is a filter byte and its packed samples. */
export function pngInflatedBytes(header: PngHeader): number {
  const rowBytes = (pixels: number) => (pixels === 0 ? 0 : 1 + pngRowBytes(header, pixels));
  if (!header.interlaced) return header.height * rowBytes(header.width);
  let total = 0;
  for (const [x0, y0, dx, dy] of ADAM7) {
    const columns = Math.ceil(Math.max(0, header.width - x0) / dx);
    const rows = Math.ceil(Math.max(0, header.height - y0) / dy);
    if (columns > 0) total += rows * rowBytes(columns);
  }
  return total;
}

/** Samples per pixel the decoder holds: a palette may expand to RGBA, and alpha is held until it is dropped. */
export function pngWorkingChannels(header: PngHeader): number {
  return header.colourType === 3 ? 4 : pngStoredSamples(header);
}

/** A complete PNG ends with its IEND chunk (`tail`: the file's last 8 bytes, IEND's type and CRC). */
export function pngEndsWithIend(tail: Uint8Array): boolean {
  return tail.length === 8 && tail[0] === 0x49 && tail[1] === 0x45 && tail[2] === 0x4e && tail[3] === 0x44;
}
