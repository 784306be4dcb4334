// Builds ImageJ .roi files of any type for the tests, laid out as ImageJ's RoiEncoder writes them
// (64-byte big-endian header, x then y coordinates relative to left/top as 16-bit values, with
// SUB_PIXEL_RESOLUTION the absolute float coordinates after them; rectangles and ovals keep
// float bounds at bytes 18..33). Independent of the decoder under test.

export const ROI_TYPE = { polygon: 0, rect: 1, oval: 2, line: 3, freehand: 7, traced: 8, point: 10 } as const;

export interface RoiSpec {
  type: number;
  /** Absolute vertices [x0, y0, x1, y1, ...] for polygon types; fractional ones need `subPixel`. */
  vertices?: number[];
  /** Rectangles and ovals: x, y, width, height (integers unless `subPixel`). */
  box?: [number, number, number, number];
  subPixel?: boolean;
}

export function roiFile(spec: RoiSpec): Uint8Array {
  const v = spec.vertices ?? [];
  const n = v.length / 2;
  const size = 64 + 4 * n + (spec.subPixel ? 8 * n : 0);
  const bytes = new Uint8Array(size);
  const view = new DataView(bytes.buffer);
  bytes.set([0x49, 0x6f, 0x75, 0x74]);
  view.setUint16(4, 228);
  view.setUint8(6, spec.type);
  let left: number, top: number, right: number, bottom: number;
  if (spec.box) {
    const [x, y, w, h] = spec.box;
    [left, top, right, bottom] = [Math.floor(x), Math.floor(y), Math.ceil(x + w), Math.ceil(y + h)];
    if (spec.subPixel) [x, y, w, h].forEach((value, i) => view.setFloat32(18 + 4 * i, value));
  } else {
    const xs = v.filter((_, i) => i % 2 === 0),
      ys = v.filter((_, i) => i % 2 === 1);
    [left, top, right, bottom] = [Math.floor(Math.min(...xs)), Math.floor(Math.min(...ys)), Math.ceil(Math.max(...xs)), Math.ceil(Math.max(...ys))];
  }
  view.setInt16(8, top);
  view.setInt16(10, left);
  view.setInt16(12, bottom);
  view.setInt16(14, right);
  view.setUint16(16, n);
  if (spec.subPixel) view.setInt16(50, 128);
  for (let i = 0; i < n; i++) {
    // i < n = v.length / 2, so both coordinates of vertex i are in v.
    const x = v[2 * i]!,
      y = v[2 * i + 1]!;
    view.setInt16(64 + 2 * i, Math.floor(x) - left);
    view.setInt16(64 + 2 * n + 2 * i, Math.floor(y) - top);
    if (spec.subPixel) {
      view.setFloat32(64 + 4 * n + 4 * i, x);
      view.setFloat32(64 + 8 * n + 4 * i, y);
    }
  }
  return bytes;
}
