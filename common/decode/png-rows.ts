// One row of a non-interlaced PNG at a time (ISO 15948, sections 9 and 7): undoing the row's filter
// against the row above, and reading samples out of the unfiltered row: 1 to 16 bits, gray, gray +
// alpha, RGB, RGBA, palette indices expanded to the palette's RGB (the whole-image decoder, png.ts,
// gives the same values through fast-png).
//
// Numeric hot loops: every index is bounded by a loop over the array's own length (or width ×
// height, or a row's samples). The `!`s state that bound to noUncheckedIndexedAccess rather
// than check it again in the inner loop.
import { ImageDecodeError, type PngHeader, pngStoredSamples } from "../../schema/image-formats/index.ts";

/** Bytes a filter looks back: one pixel, at least one byte. */
export function filterStep(header: PngHeader): number {
  return Math.max(1, Math.ceil((pngStoredSamples(header) * header.bitDepth) / 8));
}

/** Undoes filter `filter` of `row` in place; `above` is the unfiltered row above (zeros for the first). */
export function unfilterRow(filter: number, row: Uint8Array, above: Uint8Array, step: number): void {
  const n = row.length;
  switch (filter) {
    case 0:
      return;
    case 1:
      for (let i = step; i < n; i++) row[i] = (row[i]! + row[i - step]!) & 0xff;
      return;
    case 2:
      for (let i = 0; i < n; i++) row[i] = (row[i]! + above[i]!) & 0xff;
      return;
    case 3:
      for (let i = 0; i < n; i++) row[i] = (row[i]! + (((i >= step ? row[i - step]! : 0) + above[i]!) >> 1)) & 0xff;
      return;
    case 4:
      for (let i = 0; i < n; i++) {
        const a = i >= step ? row[i - step]! : 0;
        const b = above[i]!;
        const c = i >= step ? above[i - step]! : 0;
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        row[i] = (row[i]! + (pa <= pb && pa <= pc ? a : pb <= pc ? b : c)) & 0xff;
      }
      return;
    default:
      throw new ImageDecodeError(`PNG corrupt: unknown filter type ${filter}`);
  }
}

/**
 * Copies pixels [x, x + width) of an unfiltered row into row `outRow` of a planar image of
 * `width × height`, channel `wanted[k]` to plane k.
 */
export function copyRowSamples(
  header: PngHeader,
  palette: Uint8Array | undefined,
  row: Uint8Array,
  x: number,
  width: number,
  height: number,
  wanted: readonly number[],
  outRow: number,
  out: Float32Array,
): void {
  const stored = pngStoredSamples(header);
  const depth = header.bitDepth;
  const mask = (1 << depth) - 1;
  const paletteSize = palette ? palette.length / 3 : 0;
  for (let k = 0; k < wanted.length; k++) {
    const c = wanted[k]!;
    let o = (k * height + outRow) * width;
    for (let px = x; px < x + width; px++, o++) {
      let value: number;
      if (depth === 16) {
        const at = 2 * (px * stored + c);
        value = (row[at]! << 8) | row[at + 1]!;
      } else if (depth === 8) {
        value = row[px * stored + (palette ? 0 : c)]!;
      } else {
        const bit = px * depth;
        value = (row[bit >> 3]! >> (8 - depth - (bit & 7))) & mask;
      }
      if (palette) {
        if (value >= paletteSize) throw new ImageDecodeError(`PNG corrupt: palette index ${value} past the ${paletteSize}-colour palette`);
        value = palette[value * 3 + c]!;
      }
      out[o] = value;
    }
  }
}
