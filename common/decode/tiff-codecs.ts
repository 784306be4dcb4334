// Decompressors for TIFF strips and tiles (JPEG blocks decode in jpeg-tile.ts). Each one stops once it has written the block's bytes,
// so the output and the work are bounded by the image size whatever the compressed stream claims.
// geotiff has these codecs too, but only behind its Promise-based API; decodeImage is synchronous
// by contract (training calls it in tight loops), so the few small codecs live here.
import { Compression, ImageDecodeError, unsupportedCompression } from "../../schema/image-formats/index.ts";
import { inflateBounded } from "./inflate-bounded.ts";

/**
 * Decodes one block to `expected` bytes. `limit` (at least `expected`) is what the block may hold
 * at most: a bottom strip may be written at full height, past which a stream is corrupt.
 */
export function decompress(compression: number, input: Uint8Array, expected: number, limit = expected): Uint8Array {
  switch (compression) {
    case Compression.None:
      return input;
    case Compression.Lzw:
      return decodeLzw(input, expected);
    case Compression.AdobeDeflate:
    case Compression.Deflate:
      return requireFull(inflateBounded(input, limit, "TIFF Deflate data"), expected, "Deflate");
    case Compression.PackBits:
      return decodePackBits(input, expected);
    default:
      throw new ImageDecodeError(unsupportedCompression(compression), "unsupported");
  }
}

function requireFull(out: Uint8Array, expected: number, codec: string, produced = out.length): Uint8Array {
  if (produced < expected) throw new ImageDecodeError(`TIFF ${codec} data ends early (${produced} of ${expected} bytes): file truncated or corrupt`);
  return out.length === expected ? out : out.subarray(0, expected);
}

/** PackBits run-length decoding (TIFF 6.0, section 9). */
function decodePackBits(input: Uint8Array, expected: number): Uint8Array {
  const out = new Uint8Array(expected);
  let i = 0;
  let o = 0;
  while (i < input.length && o < expected) {
    const header = (input[i++]! << 24) >> 24; // as signed byte
    if (header >= 0) {
      const n = Math.min(header + 1, expected - o, input.length - i);
      out.set(input.subarray(i, i + n), o);
      i += header + 1;
      o += n;
    } else if (header !== -128) {
      if (i >= input.length) break;
      const n = Math.min(1 - header, expected - o);
      out.fill(input[i++]!, o, o + n);
      o += n;
    }
  }
  return requireFull(out, expected, "PackBits", o);
}

/**
 * TIFF LZW (TIFF 6.0, section 13): MSB-first codes of 9 to 12 bits, 256 = clear, 257 = end, and
 * the code width grows one code early (at 511, 1023, 2047), unlike GIF's LZW.
 */
function decodeLzw(input: Uint8Array, expected: number): Uint8Array {
  const out = new Uint8Array(expected);
  const prefix = new Uint16Array(4096);
  const suffix = new Uint8Array(4096);
  const first = new Uint8Array(4096); // first byte of each code's string
  const length = new Uint16Array(4096);
  for (let c = 0; c < 256; c++) {
    suffix[c] = c;
    first[c] = c;
    length[c] = 1;
  }
  let o = 0;
  let bitPos = 0;
  const totalBits = input.length * 8;
  let width = 9;
  let next = 258;
  let previous = -1;

  while (o < expected && bitPos + width <= totalBits) {
    // Read `width` bits MSB-first; up to 3 bytes cover any 12-bit code at any bit offset.
    const byte = bitPos >>> 3;
    const chunk = (input[byte]! << 16) | ((input[byte + 1] ?? 0) << 8) | (input[byte + 2] ?? 0);
    const code = (chunk >>> (24 - (bitPos & 7) - width)) & ((1 << width) - 1);
    bitPos += width;

    if (code === 257) break;
    if (code === 256) {
      width = 9;
      next = 258;
      previous = -1;
      continue;
    }
    let written: number;
    if (previous < 0) {
      if (code > 255) throw new ImageDecodeError("TIFF LZW data is corrupt: first code after a clear is not a literal");
      out[o] = code;
      written = 1;
    } else {
      const known = code < next;
      if (!known && code !== next) throw new ImageDecodeError("TIFF LZW data is corrupt: code out of sequence");
      if (next < 4096) {
        prefix[next] = previous;
        suffix[next] = known ? first[code]! : first[previous]!;
        first[next] = first[previous]!;
        length[next] = length[previous]! + 1;
        next++;
      }
      written = writeString(code, out, o, prefix, suffix, length);
    }
    o += written;
    previous = code;
    if (next + 1 >= 1 << width && width < 12) width++;
  }
  return requireFull(out, expected, "LZW", o);
}

/** Writes the string of `code` at out[o..], clipped to the buffer; returns its full length. */
function writeString(code: number, out: Uint8Array, o: number, prefix: Uint16Array, suffix: Uint8Array, length: Uint16Array): number {
  const n = length[code]!;
  let c = code;
  for (let k = n - 1; k >= 0; k--) {
    if (o + k < out.length) out[o + k] = suffix[c]!;
    c = prefix[c]!;
  }
  return n;
}
