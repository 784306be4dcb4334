// A PNG writer for test fixtures that exercises what a row reader must handle: every filter type
// (row y uses filter y mod 5), sub-byte depths, palettes, and image data split over many IDAT
// chunks. Shares no code with the decoders.
import { zlibSync } from "fflate";
import { chunk, ihdr, iend, rawPng } from "../../fixtures/hostile-images.ts";

const STORED: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };

export interface PngImage {
  width: number;
  height: number;
  colourType: 0 | 2 | 3 | 4 | 6;
  bitDepth: 1 | 2 | 4 | 8 | 16;
  /** Stored samples, interleaved row-major (palette indices for colour type 3). */
  values: ArrayLike<number>;
  palette?: [number, number, number][];
  /** Bytes of compressed data per IDAT chunk (default: all in one). */
  idatBytes?: number;
}

export function encodePng(image: PngImage): Uint8Array {
  const { width, height, bitDepth } = image;
  const stored = STORED[image.colourType]!;
  const rowBytes = Math.ceil((width * stored * bitDepth) / 8);
  const step = Math.max(1, Math.ceil((stored * bitDepth) / 8));
  const filtered = new Uint8Array(height * (rowBytes + 1));
  let above: Uint8Array = new Uint8Array(rowBytes);
  for (let y = 0; y < height; y++) {
    const row = packRow(image, y, rowBytes, stored);
    const filter = y % 5;
    const out = filtered.subarray(y * (rowBytes + 1), (y + 1) * (rowBytes + 1));
    out[0] = filter;
    for (let i = 0; i < rowBytes; i++) {
      const a = i >= step ? row[i - step]! : 0;
      const b = above[i]!;
      const c = i >= step ? above[i - step]! : 0;
      const predicted = [0, a, b, (a + b) >> 1, paeth(a, b, c)][filter]!;
      out[1 + i] = (row[i]! - predicted) & 0xff;
    }
    above = row;
  }
  const data = zlibSync(filtered);
  const size = image.idatBytes ?? data.length;
  const idats: Uint8Array[] = [];
  for (let at = 0; at < data.length; at += size) idats.push(chunk("IDAT", data.subarray(at, at + size)));
  const plte = image.palette ? [chunk("PLTE", Uint8Array.from(image.palette.flat()))] : [];
  return rawPng(ihdr(width, height, bitDepth, image.colourType), chunk("tEXt", new TextEncoder().encode("Comment\0test")), ...plte, ...idats, iend());
}

function packRow(image: PngImage, y: number, rowBytes: number, stored: number): Uint8Array {
  const row = new Uint8Array(rowBytes);
  const count = image.width * stored;
  for (let i = 0; i < count; i++) {
    const v = image.values[y * count + i]!;
    if (image.bitDepth === 16) {
      row[2 * i] = v >> 8;
      row[2 * i + 1] = v & 0xff;
    } else if (image.bitDepth === 8) {
      row[i] = v;
    } else {
      const bit = i * image.bitDepth;
      row[bit >> 3] = row[bit >> 3]! | (v << (8 - image.bitDepth - (bit & 7)));
    }
  }
  return row;
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const [pa, pb, pc] = [Math.abs(p - a), Math.abs(p - b), Math.abs(p - c)];
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}
