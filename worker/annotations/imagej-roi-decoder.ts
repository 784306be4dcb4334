// Reads one ImageJ .roi file, from the format ImageJ's ij/io/RoiDecoder.java documents: a 64-byte
// big-endian header ("Iout", version, type byte, bounds top/left/bottom/right, vertex count,
// options, header2 offset, ...), the x then y vertex coordinates as 16-bit values relative to
// left/top, then with SUB_PIXEL_RESOLUTION (version >= 222) the same vertices again as absolute
// 32-bit floats; header2 holds the name as UTF-16. The writer is worker/exports/imagej-roi.ts.
//
// Area ROIs become outlines: polygon, freehand and traced ROIs their vertices (subpixel ones their
// float vertices), rectangles their four corners, ovals the ellipse inscribed in their bounds as a
// polygon of short chords. Lines, points, angles, text and composite (ShapeRoi) ROIs are refused.
// A spline-fitted polygon is read as its control polygon and a rounded rectangle as a rectangle.

import { AnnotationImportError } from "./errors.ts";

const IMAGEJ_ROI_TYPES = {
  polygon: 0,
  rect: 1,
  oval: 2,
  line: 3,
  freeline: 4,
  polyline: 5,
  noRoi: 6,
  freehand: 7,
  traced: 8,
  angle: 9,
  point: 10,
} as const;
const TYPE_NAMES = Object.fromEntries(Object.entries(IMAGEJ_ROI_TYPES).map(([name, code]) => [code, name])) as Record<number, string>;

const HEADER_SIZE = 64;
const OPTION_SUB_PIXEL_RESOLUTION = 128;
const SUBTYPE_TEXT = 1;

interface DecodedImageJRoi {
  version: number;
  type: number;
  /** Integer bounds from the header. */
  top: number;
  left: number;
  bottom: number;
  right: number;
  /** The outline: interleaved absolute x, y, without a repeated closing vertex. */
  polygon: Float64Array;
  name: string | null;
}

export function isImageJRoi(bytes: Uint8Array): boolean {
  return bytes.length >= 4 && bytes[0] === 0x49 && bytes[1] === 0x6f && bytes[2] === 0x75 && bytes[3] === 0x74; // "Iout"
}

/** `where` names the ROI in error details ("the ROI", "entry 0003-cell.roi"). */
export function decodeImageJRoi(bytes: Uint8Array, where = "the ROI"): DecodedImageJRoi {
  if (!isImageJRoi(bytes)) throw new AnnotationImportError("unreadable", `${where} is not an ImageJ ROI (no "Iout" signature)`);
  if (bytes.length < HEADER_SIZE) throw new AnnotationImportError("unreadable", `${where} is truncated (${bytes.length} bytes, the header alone has 64)`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // ImageJ reads 16-bit values as signed, except that below -5000 they are taken as unsigned.
  const short = (at: number) => {
    const s = view.getInt16(at);
    return s < -5000 ? view.getUint16(at) : s;
  };
  const version = view.getUint16(4);
  const type = view.getUint8(6);
  const top = short(8),
    left = short(10),
    bottom = short(12),
    right = short(14);
  let n = view.getUint16(16);
  if (n === 0) n = view.getInt32(18); // large polygons keep their count in the SIZE field
  const subtype = view.getInt16(48);
  const options = view.getInt16(50);
  const header2 = view.getUint32(60);
  const subPixel = (options & OPTION_SUB_PIXEL_RESOLUTION) !== 0 && version >= 222;
  const typeName = TYPE_NAMES[type] ?? `unknown type ${type}`;

  if (view.getInt32(36) > 0) throw refused(where, "a composite (shape) ROI");
  if (subtype === SUBTYPE_TEXT) throw refused(where, "a text ROI");
  let polygon: Float64Array;
  switch (type) {
    case IMAGEJ_ROI_TYPES.rect:
    case IMAGEJ_ROI_TYPES.oval: {
      const [x, y, w, h] =
        subPixel && version >= 223
          ? [view.getFloat32(18), view.getFloat32(22), view.getFloat32(26), view.getFloat32(30)]
          : [left, top, right - left, bottom - top];
      if (!(w > 0 && h > 0)) throw new AnnotationImportError("invalid_content", `${where}: ${typeName} of size ${w}x${h} has no area`);
      polygon = type === IMAGEJ_ROI_TYPES.rect ? Float64Array.of(x, y, x + w, y, x + w, y + h, x, y + h) : ellipse(x, y, w, h);
      break;
    }
    case IMAGEJ_ROI_TYPES.polygon:
    case IMAGEJ_ROI_TYPES.freehand:
    case IMAGEJ_ROI_TYPES.traced:
      polygon = vertices(view, n, left, top, subPixel, where);
      break;
    default:
      throw refused(where, `a ${typeName} ROI`);
  }
  return { version, type, top, left, bottom, right, polygon, name: roiName(view, header2) };
}

function refused(where: string, what: string): AnnotationImportError {
  return new AnnotationImportError("invalid_content", `${where} is ${what}; only area ROIs (polygon, freehand, traced, rectangle, oval) can be imported`);
}

function vertices(view: DataView, n: number, left: number, top: number, subPixel: boolean, where: string): Float64Array {
  const needed = HEADER_SIZE + 4 * n + (subPixel ? 8 * n : 0);
  if (!(n >= 0) || needed > view.byteLength) {
    throw new AnnotationImportError("unreadable", `${where} is truncated: ${n} vertices need ${needed} bytes, the file has ${view.byteLength}`);
  }
  const polygon = new Float64Array(2 * n);
  if (subPixel) {
    const xs = HEADER_SIZE + 4 * n,
      ys = xs + 4 * n;
    for (let i = 0; i < n; i++) {
      polygon[2 * i] = view.getFloat32(xs + 4 * i);
      polygon[2 * i + 1] = view.getFloat32(ys + 4 * i);
    }
  } else {
    const short = (at: number) => {
      const s = view.getInt16(at);
      return s < -5000 ? view.getUint16(at) : s;
    };
    // As ImageJ does, negative relative coordinates count as 0.
    for (let i = 0; i < n; i++) {
      polygon[2 * i] = left + Math.max(0, short(HEADER_SIZE + 2 * i));
      polygon[2 * i + 1] = top + Math.max(0, short(HEADER_SIZE + 2 * n + 2 * i));
    }
  }
  return polygon;
}

/** The ellipse inscribed in (x, y, w, h) as a polygon whose chords are about half a pixel long. */
function ellipse(x: number, y: number, w: number, h: number): Float64Array {
  const a = w / 2,
    b = h / 2;
  const circumference = Math.PI * (3 * (a + b) - Math.sqrt((3 * a + b) * (a + 3 * b))); // Ramanujan
  const n = Math.min(4096, Math.max(16, Math.ceil(2 * circumference)));
  const out = new Float64Array(2 * n);
  for (let i = 0; i < n; i++) {
    const t = (2 * Math.PI * i) / n;
    out[2 * i] = x + a + a * Math.cos(t);
    out[2 * i + 1] = y + b + b * Math.sin(t);
  }
  return out;
}

function roiName(view: DataView, header2: number): string | null {
  if (header2 === 0 || header2 + 24 > view.byteLength) return null;
  const offset = view.getUint32(header2 + 16);
  const length = view.getUint32(header2 + 20);
  if (offset === 0 || length === 0 || offset + 2 * length > view.byteLength) return null;
  let name = "";
  for (let i = 0; i < length; i++) name += String.fromCharCode(view.getUint16(offset + 2 * i));
  return name;
}
