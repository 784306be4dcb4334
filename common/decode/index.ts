// Image decoding for the engine: picks the decoder from the file's signature (never its name).
// decodeImage is synchronous on purpose: the runner and the trainer call it on bytes already in
// memory, and training loops decode many images without awaiting anything.
import { ImageDecodeError, type DecodedImage, type DecodeOptions } from "./decoded-image.ts";
import { decodeJpeg, isJpeg } from "./jpeg.ts";
import { decodePng, isPng } from "./png.ts";
import { decodeTiff } from "./tiff.ts";
import { isTiff } from "./tiff-directory.ts";
import { probeImage } from "./probe.ts";
import { sniffImageFormat, SNIFF_BYTES } from "../../schema/image-formats/index.ts";

export { ImageDecodeError } from "./decoded-image.ts";
export type { DecodedImage, ImageProbe } from "./decoded-image.ts";
// The headers alone, on bytes or through ranged reads (probe.ts).
export { probeImage, probeImageSource } from "./probe.ts";

export function decodeImage(bytes: Uint8Array, options?: DecodeOptions): DecodedImage {
  if (isTiff(bytes)) return decodeTiff(bytes, options);
  if (isPng(bytes)) return decodePng(bytes, options);
  if (isJpeg(bytes)) return decodeJpeg(bytes, options);
  const format = sniffImageFormat(bytes.subarray(0, SNIFF_BYTES));
  if (format === "dicom" || format === "zip") {
    // A slide level, a Zarr store or a DICOM series is read tile by tile (openImageRegions); its headers are still checked, so a forged one is named.
    probeImage(bytes);
    throw new ImageDecodeError(
      `${format === "dicom" ? "a DICOM whole-slide image" : "a zipped OME-Zarr or DICOM series"} is read by region, not decoded whole`,
      "unsupported",
    );
  }
  throw unknownFormat(bytes);
}

function unknownFormat(bytes: Uint8Array): ImageDecodeError {
  if (bytes.length === 0) return new ImageDecodeError("empty file", "unsupported");
  return new ImageDecodeError("unrecognised image format (supported: TIFF, PNG, JPEG; DICOM whole-slide and OME-Zarr by region)", "unsupported");
}
