// PNG's framing, after the PNG specification (W3C, 2003): the signature, and chunks of length, type,
// data and the CRC-32 of type and data. One home for the service's streamed masks.png
// (worker/exports/label-png.ts), the engine's (gpu-runner/engine/outputs/label-png.ts) and the
// preview tiles (gpu-runner/engine/png-encode.ts).
import { crc32 } from "./crc32.ts";

export const PNG_SIGNATURE = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export function pngChunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  out.set(data, 8);
  view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

/** The IHDR chunk of a 16-bit grayscale image (deflate, filter method 0, no interlace), the label images' layout. */
export function label16Header(width: number, height: number): Uint8Array {
  const data = new Uint8Array(13);
  const view = new DataView(data.buffer);
  view.setUint32(0, width);
  view.setUint32(4, height);
  data[8] = 16; // bit depth
  data[9] = 0; // grayscale; compression, filter method and interlace stay 0
  return pngChunk("IHDR", data);
}
