// What reading an image by region means, whatever the format: the image's description, a
// rectangle's bounds and size limit, and cutting a rectangle out of an image already decoded.
import { ImageDecodeError, MAX_REGION_SAMPLES } from "../../schema/image-formats/index.ts";
import { type DecodedImage, type ImageFormat, type SampleFormat, selectChannels } from "./decoded-image.ts";

interface RegionOptions {
  /** Channel indices to keep, in this order (default: all). */
  channels?: number[];
}

export interface ImageRegions {
  width: number;
  height: number;
  /** Channels a region has before any `channels` selection. */
  channels: number;
  bitDepth: number;
  sampleFormat: SampleFormat;
  format: ImageFormat;
  /** Planes selectable with `page` when opening (TIFF pages, OME/ImageJ Z×T planes); 1 for PNG/JPEG. */
  pages: number;
  /** Reduced-resolution levels of a pyramid (a slide's pages, SubIFDs, OME-Zarr datasets), largest first; empty if none. */
  levels: { width: number; height: number }[];
  /**
   * Opens reduced level `index` (of `levels`) as an image of its own, where the reader can (a
   * slide's level pages, an OME-Zarr's datasets): a preview reads a level near its own size, not
   * the full resolution. Absent where it cannot.
   */
  readLevel?(index: number): Promise<ImageRegions>;
  /**
   * Row-sequential readers (a PNG: one zlib stream; a strip TIFF: strips as wide as the image) keep
   * the last rows they decoded, so regions side by side or overlapping the last ones cost no new
   * pass: `rowBytes` is what one full-width row takes in that store, and `keepRows(n)` sizes it to
   * hold n rows (until then, a default of tens of MB) (the caller counts n x rowBytes in its memory). Absent for readers that read at random.
   */
  rowBytes?: number;
  keepRows?(rows: number): void;
  /**
   * Reads [x, x+w) × [y, y+h) as a planar DecodedImage of w × h (channels as selected). A rectangle
   * outside the image is a RangeError; one of more than MAX_REGION_SAMPLES samples an ImageDecodeError.
   */
  readRegion(x: number, y: number, w: number, h: number, options?: RegionOptions): Promise<DecodedImage>;
}

/** Checks a region request against the image; returns the channels to keep. */
export function checkRegion(
  image: Pick<ImageRegions, "width" | "height" | "channels">,
  x: number,
  y: number,
  w: number,
  h: number,
  options?: RegionOptions,
): number[] {
  const integers = [x, y, w, h].every((n) => Number.isSafeInteger(n));
  if (!integers || x < 0 || y < 0 || w < 1 || h < 1 || x + w > image.width || y + h > image.height) {
    throw new RangeError(`region ${w}x${h} at (${x}, ${y}) does not lie inside the ${image.width}x${image.height} image`);
  }
  const wanted = selectChannels(image.channels, options?.channels);
  if (w * h * wanted.length > MAX_REGION_SAMPLES) {
    throw new ImageDecodeError(`region too large: ${w}x${h}x${wanted.length} exceeds the ${MAX_REGION_SAMPLES} samples one read may decode`, "too-large");
  }
  return wanted;
}

/** The rectangle of an image decoded whole, channels `wanted` of it. */
export function cutRegion(image: DecodedImage, x: number, y: number, w: number, h: number, wanted: readonly number[]): DecodedImage {
  const data = new Float32Array(wanted.length * w * h);
  const plane = image.width * image.height;
  wanted.forEach((c, k) => {
    for (let row = 0; row < h; row++) {
      const from = c * plane + (y + row) * image.width + x;
      data.set(image.data.subarray(from, from + w), (k * h + row) * w);
    }
  });
  return { width: w, height: h, channels: wanted.length, bitDepth: image.bitDepth, sampleFormat: image.sampleFormat, data };
}
