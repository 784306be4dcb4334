// What block-wise segmentation reads an image through: its size and a rectangle at a time, so an
// image larger than memory is never held whole. The decoders' region readers (a TIFF read tile by
// tile through ranged reads, a PNG row by row) satisfy it, and so does an image already in memory.
import type { DecodedImage } from "../decode/index.ts";

export interface RegionSource {
  width: number;
  height: number;
  channels: number;
  /** Reads [x, x + w) x [y, y + h) as a planar image of w x h pixels with every channel. */
  readRegion(x: number, y: number, w: number, h: number): Promise<DecodedImage>;
}

/** A decoded image read a rectangle at a time (tests, and images small enough to decode whole). */
export function inMemoryRegions(image: DecodedImage): RegionSource {
  const { width, height, channels } = image;
  return {
    width,
    height,
    channels,
    async readRegion(x, y, w, h) {
      if (!(x >= 0 && y >= 0 && w > 0 && h > 0 && x + w <= width && y + h <= height))
        throw new RangeError(`region ${x},${y} ${w}x${h} is outside the ${width}x${height} image`);
      const data = new Float32Array(channels * w * h);
      for (let c = 0; c < channels; c++)
        for (let row = 0; row < h; row++) {
          const from = (c * height + y + row) * width + x;
          data.set(image.data.subarray(from, from + w), (c * h + row) * w);
        }
      return { ...image, width: w, height: h, data };
    },
  };
}
