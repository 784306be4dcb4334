// Regions of an image that cannot be read by parts: a JPEG (its entropy-coded data runs through
// the whole frame; the files are small) or an interlaced PNG. The file is read and decoded whole,
// under the whole-image limits (MAX_SAMPLES, and MAX_WHOLE_READ_BYTES for the file), and regions
// are cut out of the decoded image.
import { checkImageSize, ImageDecodeError, JPEG_WORKING_CHANNELS, MAX_WHOLE_READ_BYTES } from "../../schema/image-formats/index.ts";
import type { ByteSource } from "./byte-source.ts";
import type { DecodedImage } from "./decoded-image.ts";
import { decodeJpeg } from "./jpeg.ts";
import { decodePng } from "./png.ts";
import { probeImage } from "./probe.ts";
import { checkRegion, cutRegion, type ImageRegions } from "./region.ts";

/** `why` says why the format is read whole, for the refusal of a file too big for that. */
export async function openWholeRegions(source: ByteSource, format: "png" | "jpeg", why: string): Promise<ImageRegions> {
  if (source.size > MAX_WHOLE_READ_BYTES) {
    throw new ImageDecodeError(`${why}, and at ${source.size} bytes it is larger than the ${MAX_WHOLE_READ_BYTES} bytes read whole`, "too-large");
  }
  let bytes: Uint8Array | undefined = await source.read(0, source.size);
  const probe = probeImage(bytes);
  // Refused before the decode (which checks again, exactly): jpeg-js holds RGBA whatever the frame.
  checkImageSize(probe.width, probe.height, format === "jpeg" ? JPEG_WORKING_CHANNELS : probe.channels);
  let decoded: DecodedImage | undefined;
  const image = { width: probe.width, height: probe.height, channels: probe.channels };
  return {
    ...image,
    bitDepth: probe.bitDepth,
    sampleFormat: probe.sampleFormat,
    format,
    pages: 1,
    levels: [],
    async readRegion(x, y, w, h, options) {
      const wanted = checkRegion(image, x, y, w, h, options);
      if (!decoded) {
        decoded = format === "png" ? decodePng(bytes!) : decodeJpeg(bytes!);
        bytes = undefined;
      }
      return cutRegion(decoded, x, y, w, h, wanted);
    },
  };
}
