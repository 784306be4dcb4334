// Image decoding for the engine: picks the decoder from the file's signature (never its name).
// decodeImage is synchronous on purpose: the runner and the trainer call it on bytes already in
// memory, and training loops decode many images without awaiting anything.
import { ImageDecodeError, type DecodedImage, type DecodeOptions, type ImageProbe } from "./decoded-image.ts";
import { decodeJpeg, isJpeg, probeJpeg } from "./jpeg.ts";
import { decodePng, isPng, probePng } from "./png.ts";
import { decodeTiff, probeTiff } from "./tiff.ts";
import { isTiff } from "./tiff-directory.ts";

export { ImageDecodeError, MAX_SAMPLES, type ImageDecodeErrorKind } from "./decoded-image.ts";
export type { DecodedImage, DecodeOptions, ImageFormat, ImageProbe, SampleFormat } from "./decoded-image.ts";

export function decodeImage(bytes: Uint8Array, options?: DecodeOptions): DecodedImage {
  if (isTiff(bytes)) return decodeTiff(bytes, options);
  if (isPng(bytes)) return decodePng(bytes, options);
  if (isJpeg(bytes)) return decodeJpeg(bytes, options);
  throw unknownFormat(bytes);
}

/** Reads only the headers: size, channels, depth and planes, without decoding pixels. */
export function probeImage(bytes: Uint8Array): ImageProbe {
  if (isTiff(bytes)) return probeTiff(bytes);
  if (isPng(bytes)) return probePng(bytes);
  if (isJpeg(bytes)) return probeJpeg(bytes);
  throw unknownFormat(bytes);
}

function unknownFormat(bytes: Uint8Array): ImageDecodeError {
  if (bytes.length === 0) return new ImageDecodeError("empty file", "unsupported");
  return new ImageDecodeError("unrecognised image format (supported: TIFF, PNG, JPEG)", "unsupported");
}
