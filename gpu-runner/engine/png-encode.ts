// The PNG encoder of the preview's 8-bit tiles (PNG, ISO/IEC 15948: signature, IHDR, one IDAT,
// IEND). Each row is filtered with Sub (a byte less the same channel's byte one pixel to its left),
// which suits images that change smoothly, and deflated by Node's native zlib. A JavaScript
// deflate (fast-png's, through pako) made encoding most of a fanned-out block's time around its
// stages and most of the merge's serial time; native zlib does the same in a fraction of it. The
// framing (signature, chunks) is the service's: common/png-chunks.ts.
import { deflateSync } from "node:zlib";
import { PNG_SIGNATURE, pngChunk } from "../../common/png-chunks.ts";

/** PNG colour types: gray, and red, green, blue. */
const COLOUR_TYPE = { 1: 0, 3: 2 } as const;
/** The Sub filter's number, the first byte of each filtered row. */
const FILTER_SUB = 1;
/** zlib's default: previews are written once and read many times. */
const DEFLATE_LEVEL = 6;

/** An 8-bit PNG of `channels` interleaved samples a pixel (1: gray, 3: RGB). */
export function encodePng8(data: Uint8Array, width: number, height: number, channels: 1 | 3): Uint8Array {
  const stride = width * channels;
  if (data.length !== stride * height) throw new Error(`${data.length} bytes for a ${width}x${height} image of ${channels} channel(s)`);
  const filtered = new Uint8Array((stride + 1) * height);
  for (let y = 0; y < height; y++) {
    const row = y * stride;
    const out = y * (stride + 1);
    filtered[out] = FILTER_SUB;
    for (let i = 0; i < channels; i++) filtered[out + 1 + i] = data[row + i]!;
    for (let i = channels; i < stride; i++) filtered[out + 1 + i] = (data[row + i]! - data[row + i - channels]!) & 0xff;
  }
  const header = new Uint8Array(13);
  const view = new DataView(header.buffer);
  view.setUint32(0, width);
  view.setUint32(4, height);
  header.set([8, COLOUR_TYPE[channels], 0, 0, 0], 8); // bit depth, colour type, deflate, adaptive filtering, no interlace
  const parts = [
    PNG_SIGNATURE,
    pngChunk("IHDR", header),
    pngChunk("IDAT", deflateSync(filtered, { level: DEFLATE_LEVEL })),
    pngChunk("IEND", new Uint8Array(0)),
  ];
  const png = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of parts) {
    png.set(part, at);
    at += part.length;
  }
  return png;
}
