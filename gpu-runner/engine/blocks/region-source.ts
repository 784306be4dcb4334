// What block-wise segmentation reads an image through: its size and a rectangle at a time, so an
// image larger than memory is never held whole. The decoders' region readers
// (decode/region-reader.ts: a TIFF tile by tile through ranged reads, a PNG row by row) are such
// sources, and so is an image already decoded.
import type { DecodedImage } from "../../../common/decode/index.ts";
import { checkRegion, cutRegion, type ImageRegions } from "../../../common/decode/region.ts";

/** rowBytes and keepRows: a row-sequential reader's kept rows (region.ts), which block-wise reading sizes to a band. */
export type RegionSource = Pick<ImageRegions, "width" | "height" | "channels" | "readRegion" | "rowBytes" | "keepRows">;

// Exported for its tests only (test/engine/cell-expansion.test.ts, test/engine/image-survey.test.ts, test/engine/intensity.test.ts, test/engine/segment-blocks.test.ts).
/** A decoded image read a rectangle at a time (tests, and images decoded whole anyway). */
export function inMemoryRegions(image: DecodedImage): RegionSource {
  return {
    width: image.width,
    height: image.height,
    channels: image.channels,
    async readRegion(x, y, w, h, options) {
      return cutRegion(image, x, y, w, h, checkRegion(image, x, y, w, h, options));
    },
  };
}
