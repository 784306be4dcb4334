// ImageJ .roi encoding of one ROI as a traced polygon (type 8), written from the format that
// ImageJ's ij/io/RoiDecoder.java documents: a 64-byte big-endian header, the x then y vertex
// coordinates as 16-bit values relative to the bounds' left/top, then "header2" (64 bytes) and the
// ROI name in UTF-16. A traced ROI's vertices are pixel corners, so ImageJ's measured area is the
// number of enclosed pixels, i.e. area_px.

import type { Roi } from "../../schema/roi.ts";

const IMAGEJ_ROI_VERSION = 228;
const IMAGEJ_ROI_TYPE_TRACED = 8;
/** ImageJ reads 16-bit coordinates as signed unless below -5000, so 60535 is the largest it reads back. */
export const IMAGEJ_MAX_COORDINATE = 60_535;
const IMAGEJ_MAX_VERTICES = 0xffff;

const HEADER_SIZE = 64;
const HEADER2_SIZE = 64;

export class ImageJRoiLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ImageJRoiLimitError";
  }
}

export function encodeImageJRoi(roi: Roi, name: string): Uint8Array {
  const p = roi.polygon;
  const n = p.length / 2;
  if (n > IMAGEJ_MAX_VERTICES) throw new ImageJRoiLimitError(`ROI ${roi.index + 1} has ${n} vertices; an ImageJ .roi holds at most ${IMAGEJ_MAX_VERTICES}`);
  const left = roi.bbox_x;
  const top = roi.bbox_y;
  const right = left + roi.bbox_w;
  const bottom = top + roi.bbox_h;
  if (right > IMAGEJ_MAX_COORDINATE || bottom > IMAGEJ_MAX_COORDINATE) {
    throw new ImageJRoiLimitError(`ROI ${roi.index + 1} reaches (${right}, ${bottom}); ImageJ .roi coordinates stop at ${IMAGEJ_MAX_COORDINATE}`);
  }
  const header2Offset = HEADER_SIZE + 4 * n;
  const nameOffset = header2Offset + HEADER2_SIZE;
  const bytes = new Uint8Array(nameOffset + 2 * name.length);
  const view = new DataView(bytes.buffer);
  bytes.set([0x49, 0x6f, 0x75, 0x74]); // "Iout"
  view.setUint16(4, IMAGEJ_ROI_VERSION);
  view.setUint8(6, IMAGEJ_ROI_TYPE_TRACED);
  view.setUint16(8, top);
  view.setUint16(10, left);
  view.setUint16(12, bottom);
  view.setUint16(14, right);
  view.setUint16(16, n);
  view.setUint32(60, header2Offset);
  // The polygon is n interleaved x, y pairs (schema/roi.ts), so 2 * i + 1 < p.length.
  for (let i = 0; i < n; i++) {
    view.setUint16(HEADER_SIZE + 2 * i, p[2 * i]! - left);
    view.setUint16(HEADER_SIZE + 2 * n + 2 * i, p[2 * i + 1]! - top);
  }
  view.setUint32(header2Offset + 16, nameOffset);
  view.setUint32(header2Offset + 20, name.length);
  for (let i = 0; i < name.length; i++) view.setUint16(nameOffset + 2 * i, name.charCodeAt(i));
  return bytes;
}
