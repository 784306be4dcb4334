// The engine's in-memory image: every decoder produces this, whatever the file format.
// Every decoding failure (unknown format, corrupt or truncated data, limits) is an ImageDecodeError
// with a kind; the error, the limits and the header rules are shared with the worker's upload
// probe in schema/image-formats.
import { ImageDecodeError, type ImageFormat, type PixelSize, type SampleFormat } from "../../schema/image-formats/index.ts";

export { ImageDecodeError } from "../../schema/image-formats/index.ts";
export type { ImageFormat, SampleFormat };

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
  /** Whether the pixels went through lossy compression (a JPEG, or a JPEG-compressed TIFF). */
  lossy: boolean;
  /** Micrometres per pixel from the file's metadata (TIFF only: schema/image-formats/calibration.ts); null when it has none. */
  pixelSize: PixelSize | null;
  /** Why the file's resolution gives no pixel size (a default, a size no microscope produces); null otherwise. */
  pixelSizeWarning: string | null;
  /** The channels' names from the file (OME-XML), one per channel; null when it names none. */
  channelNames: string[] | null;
  /** The format in words: "Aperio SVS", "OME-TIFF", "pyramidal TIFF", "DICOM whole-slide", "PNG", ... */
  formatName: string;
  /** A pyramid's reduced-resolution levels, largest first (the image read is its full resolution); empty if none. */
  levels: { width: number; height: number }[];
  /** The objective's magnification the file states (Aperio AppMag, OME NominalMagnification, DICOM ObjectiveLensPower); null if none. */
  objectiveMagnification: number | null;
}

export interface DecodeOptions {
  /** Channel indices to keep, in this order (default: all). */
  channels?: number[];
  /** Plane to decode (default 0): a TIFF page, or a Z×T plane of an OME/ImageJ hyperstack. */
  page?: number;
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
