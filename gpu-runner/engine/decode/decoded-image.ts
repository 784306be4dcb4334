// The engine's in-memory image: every decoder produces this, whatever the file format.

export type SampleFormat = "uint" | "int" | "float";

export interface DecodedImage {
  width: number;
  height: number;
  channels: number;
  /** Bits per sample in the file (8, 16, 32, 64); 1/2/4-bit PNGs report their own depth. */
  bitDepth: number;
  sampleFormat: SampleFormat;
  /** Planar [C, H, W]: channel c, row y, column x at data[(c * height + y) * width + x]. */
  data: Float32Array;
}

export type ImageFormat = "tiff" | "png" | "jpeg";

/** What the headers say, without decoding any pixels. */
export interface ImageProbe {
  format: ImageFormat;
  width: number;
  height: number;
  /** Channels a default decode returns (before any `channels` selection). */
  channels: number;
  bitDepth: number;
  sampleFormat: SampleFormat;
  /** Planes selectable with `page`: TIFF pages (or OME/ImageJ Z×T planes); 1 for PNG/JPEG. */
  pages: number;
}

export interface DecodeOptions {
  /** Channel indices to keep, in this order (default: all). */
  channels?: number[];
  /** Plane to decode (default 0): a TIFF page, or a Z×T plane of an OME/ImageJ hyperstack. */
  page?: number;
}

/** Every decoding failure (unknown format, corrupt or truncated data, limits) is one of these. */
export class ImageDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ImageDecodeError";
  }
}

/**
 * Largest image accepted, in samples (width × height × channels): 2^28 float32 samples are 1 GiB,
 * which covers a 16384² single-channel or an 8192² four-channel image. Checked against the headers
 * before any pixel buffer is allocated, so a forged header cannot make us allocate more.
 */
export const MAX_SAMPLES = 2 ** 28;

export function checkDimensions(width: number, height: number, channels: number): void {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
    throw new ImageDecodeError(`invalid image size ${width}x${height}`);
  }
  if (!Number.isInteger(channels) || channels < 1) throw new ImageDecodeError(`invalid channel count ${channels}`);
  if (width * height * channels > MAX_SAMPLES) {
    throw new ImageDecodeError(`image too large: ${width}x${height}x${channels} exceeds ${MAX_SAMPLES} samples`);
  }
}

/** Resolves a `channels` option against the channels a file has; returns the indices to keep. */
export function selectChannels(available: number, requested: number[] | undefined): number[] {
  if (requested === undefined) return Array.from({ length: available }, (_, i) => i);
  if (requested.length === 0) throw new ImageDecodeError("channels: empty selection");
  for (const c of requested) {
    if (!Number.isInteger(c) || c < 0 || c >= available) {
      throw new ImageDecodeError(`channel ${c} does not exist (image has ${available} channel${available === 1 ? "" : "s"})`);
    }
  }
  return requested.slice();
}
