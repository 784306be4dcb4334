// Baseline and progressive JPEG through jpeg-js. jpeg-js always returns RGB; the component count
// in the frame header tells whether the file is grayscale, in which case one channel is kept.
import jpeg from "jpeg-js";
import { checkDimensions, ImageDecodeError, MAX_SAMPLES, selectChannels, type DecodedImage, type DecodeOptions, type ImageProbe } from "./decoded-image.ts";

export function isJpeg(bytes: Uint8Array): boolean {
  return bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff;
}

/** Walks the marker segments to the first start-of-frame (SOF0..SOF15 except DHT/JPG/DAC). */
export function probeJpeg(bytes: Uint8Array): ImageProbe {
  let at = 2;
  while (at + 4 <= bytes.length) {
    if (bytes[at] !== 0xff) throw new ImageDecodeError("JPEG corrupt: expected a marker");
    const marker = bytes[at + 1]!;
    if (marker === 0xff) { at++; continue; } // fill byte
    const length = (bytes[at + 2]! << 8) | bytes[at + 3]!;
    const isFrame = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (isFrame) {
      if (at + 10 > bytes.length) break;
      const height = (bytes[at + 5]! << 8) | bytes[at + 6]!;
      const width = (bytes[at + 7]! << 8) | bytes[at + 8]!;
      const components = bytes[at + 9]!;
      return { format: "jpeg", width, height, channels: components === 1 ? 1 : 3, bitDepth: bytes[at + 4]!, sampleFormat: "uint", pages: 1 };
    }
    at += 2 + length;
  }
  throw new ImageDecodeError("JPEG truncated: no frame header found");
}

export function decodeJpeg(bytes: Uint8Array, options: DecodeOptions = {}): DecodedImage {
  const probe = probeJpeg(bytes);
  checkDimensions(probe.width, probe.height, 4); // jpeg-js decodes to RGB(A) internally
  if ((options.page ?? 0) !== 0) throw new ImageDecodeError(`page ${options.page} does not exist (JPEG has 1 page)`);
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
  const stride = decoded.data.length / (width * height);
  if (!Number.isInteger(stride) || stride < 3) throw new ImageDecodeError("JPEG decoded to an unexpected layout");
  const wanted = selectChannels(probe.channels, options.channels);
  const planeSize = width * height;
  const data = new Float32Array(wanted.length * planeSize);
  for (let k = 0; k < wanted.length; k++) {
    const c = wanted[k]!;
    for (let i = 0; i < planeSize; i++) data[k * planeSize + i] = decoded.data[i * stride + c]!;
  }
  return { width, height, channels: wanted.length, bitDepth: 8, sampleFormat: "uint", data };
}
