// Baseline and progressive JPEG through jpeg-js. jpeg-js always returns RGB; the component count
// in the frame header tells whether the file is grayscale, in which case one channel is kept
// (schema/image-formats/jpeg.ts holds that rule for the worker's probe too).
import jpeg from "jpeg-js";
import {
  checkImageSize,
  ImageDecodeError,
  isJpegFrameMarker,
  isJpegStandaloneMarker,
  JPEG_WORKING_CHANNELS,
  jpegChannels,
  jpegEndsWithEoi,
  jpegFrameFits,
  MAX_JPEG_SEGMENTS_BEFORE_FRAME,
  MAX_SAMPLES,
} from "../../schema/image-formats/index.ts";
import { selectChannels, type DecodedImage, type DecodeOptions, type ImageProbe } from "./decoded-image.ts";

export function isJpeg(bytes: Uint8Array): boolean {
  return bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff;
}

interface JpegFrame extends ImageProbe {
  components: number;
  /** Byte offset just past the frame header, where the entropy-coded data can begin at the earliest. */
  end: number;
}

/** Walks the marker segments to the first start-of-frame (ITU T.81, B.1.1). */
export function readFrame(bytes: Uint8Array): JpegFrame {
  if (!jpegEndsWithEoi(bytes.subarray(bytes.length - 2))) throw new ImageDecodeError("JPEG truncated: it does not end with an EOI marker");
  let at = 2;
  for (let segments = 0; at + 4 <= bytes.length; segments++) {
    if (segments > MAX_JPEG_SEGMENTS_BEFORE_FRAME)
      throw new ImageDecodeError(`JPEG corrupt: no frame header in its first ${MAX_JPEG_SEGMENTS_BEFORE_FRAME} marker segments`);
    if (bytes[at] !== 0xff) throw new ImageDecodeError("JPEG corrupt: expected a marker");
    const marker = bytes[at + 1]!;
    if (marker === 0xff) {
      at++;
      continue;
    } // fill byte
    if (isJpegStandaloneMarker(marker)) {
      at += 2;
      continue;
    }
    if (marker === 0xda) throw new ImageDecodeError("JPEG corrupt: scan data before the frame header");
    const length = (bytes[at + 2]! << 8) | bytes[at + 3]!;
    if (length < 2) throw new ImageDecodeError("JPEG corrupt: marker segment shorter than its length field");
    if (isJpegFrameMarker(marker)) {
      if (at + 10 > bytes.length) break;
      const height = (bytes[at + 5]! << 8) | bytes[at + 6]!;
      const width = (bytes[at + 7]! << 8) | bytes[at + 8]!;
      const components = bytes[at + 9]!;
      if (width === 0 || height === 0 || components === 0)
        throw new ImageDecodeError(`JPEG has an invalid frame ${width}x${height} with ${components} components`);
      const channels = jpegChannels(components);
      return {
        format: "jpeg",
        width,
        height,
        channels,
        components,
        bitDepth: bytes[at + 4]!,
        sampleFormat: "uint",
        pages: 1,
        lossy: true,
        pixelSize: null,
        pixelSizeWarning: null,
        channelNames: null,
        formatName: "JPEG",
        levels: [],
        objectiveMagnification: null,
        end: at + 2 + length,
      };
    }
    at += 2 + length;
  }
  throw new ImageDecodeError("JPEG truncated: no frame header found");
}

export function decodeJpeg(bytes: Uint8Array, options: DecodeOptions = {}): DecodedImage {
  const frame = readFrame(bytes);
  checkImageSize(frame.width, frame.height, JPEG_WORKING_CHANNELS);
  if ((options.page ?? 0) !== 0) throw new ImageDecodeError(`page ${options.page} does not exist (JPEG has 1 page)`);
  // jpeg-js would allocate the whole frame before finding out that the data cannot fill it.
  if (!jpegFrameFits(frame.width, frame.height, bytes.length - frame.end)) {
    throw new ImageDecodeError(`JPEG truncated: ${bytes.length - frame.end} bytes of data cannot hold a ${frame.width}x${frame.height} frame`);
  }
  let decoded: { width: number; height: number; data: Uint8Array };
  try {
    decoded = jpeg.decode(bytes, {
      useTArray: true,
      formatAsRGBA: false,
      tolerantDecoding: false,
      maxResolutionInMP: MAX_SAMPLES / 1e6,
      maxMemoryUsageInMB: 4096,
    });
  } catch (error) {
    throw new ImageDecodeError(`JPEG corrupt or truncated: ${(error as Error).message}`);
  }
  const { width, height } = decoded;
  if (width !== frame.width || height !== frame.height) throw new ImageDecodeError("JPEG corrupt: decoded size differs from its frame header");
  const stride = decoded.data.length / (width * height);
  if (!Number.isInteger(stride) || stride < 3) throw new ImageDecodeError("JPEG decoded to an unexpected layout");
  const wanted = selectChannels(frame.channels, options.channels);
  const planeSize = width * height;
  const data = new Float32Array(wanted.length * planeSize);
  for (let k = 0; k < wanted.length; k++) {
    const c = wanted[k]!;
    for (let i = 0; i < planeSize; i++) data[k * planeSize + i] = decoded.data[i * stride + c]!;
  }
  return { width, height, channels: wanted.length, bitDepth: 8, sampleFormat: "uint", data };
}
