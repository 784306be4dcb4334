// Decodes an ImageJ .roi, written for the tests from the format ImageJ's ij/io/RoiDecoder.java
// documents (64-byte big-endian header; x then y coordinates relative to left/top; header2 with
// the name as UTF-16), independently of the encoder under test.

export interface DecodedImageJRoi {
  version: number;
  type: number;
  top: number;
  left: number;
  bottom: number;
  right: number;
  /** Absolute vertex coordinates, interleaved x, y. */
  polygon: Int32Array;
  name: string | null;
}

export function decodeImageJRoi(bytes: Uint8Array): DecodedImageJRoi {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (String.fromCharCode(...bytes.subarray(0, 4)) !== "Iout") throw new Error("not an ImageJ ROI");
  // ImageJ reads 16-bit values as signed, except that below -5000 they are taken as unsigned.
  const short = (at: number) => {
    const s = v.getInt16(at);
    return s < -5000 ? v.getUint16(at) : s;
  };
  const top = short(8), left = short(10), bottom = short(12), right = short(14);
  const n = v.getUint16(16);
  const polygon = new Int32Array(2 * n);
  for (let i = 0; i < n; i++) {
    polygon[2 * i] = left + Math.max(0, short(64 + 2 * i));
    polygon[2 * i + 1] = top + Math.max(0, short(64 + 2 * n + 2 * i));
  }
  let name: string | null = null;
  const header2 = v.getUint32(60);
  if (header2 > 0 && header2 + 64 <= bytes.length) {
    const offset = v.getUint32(header2 + 16);
    const length = v.getUint32(header2 + 20);
    if (offset > 0 && offset + 2 * length <= bytes.length) {
      name = "";
      for (let i = 0; i < length; i++) name += String.fromCharCode(v.getUint16(offset + 2 * i));
    }
  }
  return { version: v.getUint16(4), type: bytes[6], top, left, bottom, right, polygon, name };
}
