// Reading rectangles of an image without reading the file whole, so the engine can segment images
// of any size block by block in bounded memory. The format comes from the file's signature:
// - TIFF and BigTIFF (tiff-regions.ts), whole slides' SVS among them: ranged reads of the directories and of the strips or tiles
//   a region intersects; the image may exceed MAX_SAMPLES, each block and each region is bounded.
// - DICOM whole-slide levels (dicom-regions.ts): ranged reads of the header and of the frames a region meets.
// - A ZIP (zip-regions.ts): an OME-Zarr store (ranged reads of the ZIP's directory, the metadata and the
//   chunks a region meets), or a DICOM series (its largest level, read as the file it is inside the ZIP).
// - PNG (png-regions.ts): rows decoded in order; reading regions top to bottom costs one pass.
//   Interlaced PNGs are read whole when small enough (whole-regions.ts).
// - JPEG: read and decoded whole, under the whole-image limits (whole-regions.ts).
// decodeImage (index.ts) stays the synchronous whole-image decoder; this is the runner's way in.
import { ImageDecodeError, SNIFF_BYTES, sniffImageFormat } from "../../schema/image-formats/index.ts";
import type { ByteSource } from "./byte-source.ts";
import { openDicomRegions } from "./dicom-regions.ts";
import { loadJpeg2000Codec } from "./jpeg2000-wasm.ts";
import { openPngRegions } from "./png-regions.ts";
import type { ImageRegions } from "./region.ts";
import { openTiffRegions } from "./tiff-regions.ts";
import { openWholeRegions } from "./whole-regions.ts";
import { openZipRegions } from "./zip-regions.ts";

export { bytesSource, countedSource, fileSource } from "./byte-source.ts";
export type { ImageRegions } from "./region.ts";

interface OpenRegionsOptions {
  /** Plane to read (default 0): a TIFF page, or a Z×T plane of an OME/ImageJ hyperstack. */
  page?: number;
}

export async function openImageRegions(source: ByteSource, options: OpenRegionsOptions = {}): Promise<ImageRegions> {
  if (source.size === 0) throw new ImageDecodeError("empty file", "unsupported");
  const format = sniffImageFormat(await source.read(0, Math.min(SNIFF_BYTES, source.size)));
  // Slides' tiles may be JPEG 2000, whose decoder is WebAssembly, loaded once per thread.
  if (format === "tiff" || format === "dicom") await loadJpeg2000Codec();
  if (format === "tiff") return openTiffRegions(source, options);
  if (!format) throw new ImageDecodeError("unrecognised image format (supported: TIFF, DICOM whole-slide, zipped OME-Zarr, PNG, JPEG)", "unsupported");
  const page = options.page ?? 0;
  if (page !== 0) throw new ImageDecodeError(`page ${page} does not exist (${format.toUpperCase()} has 1 page)`);
  if (format === "dicom") return openDicomRegions(source);
  if (format === "zip") return openZipRegions(source);
  if (format === "png") return openPngRegions(source);
  return openWholeRegions(source, "jpeg", "a JPEG cannot be read by parts");
}
