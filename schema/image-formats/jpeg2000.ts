// JPEG 2000 header rules (ITU-T T.800, annex A): what a codestream declares in its SIZ marker
// segment, read before a decoder sees it, so a tile that claims a huge image or other components
// than its TIFF page is refused before anything is allocated. Slide scanners store raw codestreams
// (Aperio's compressions 33003 and 33005); a JP2 file wraps one in a 'jp2c' box (ISO 15444-1 annex I).
import { ImageDecodeError } from "./errors.ts";

interface Jpeg2000Header {
  /** The image area: Xsiz − XOsiz by Ysiz − YOsiz (A.5.1). */
  width: number;
  height: number;
  components: number;
  /** Bits of each component (Ssiz's low 7 bits, plus one). */
  precision: number;
  signed: boolean;
  /** Whether any component is sampled more coarsely than the grid (XRsiz or YRsiz above 1). */
  subsampled: boolean;
  /** Where the codestream starts in the bytes (past a JP2 wrapper's boxes). */
  start: number;
}

const SOC = 0xff4f;
const SIZ = 0xff51;
const EOC = 0xffd9;

/** Boxes read looking for the codestream of a JP2 file: real files have a handful before it. */
const MAX_JP2_BOXES = 64;

/** Reads the SIZ segment of a codestream, or of the codestream a JP2 file wraps. */
export function readJpeg2000Header(bytes: Uint8Array): Jpeg2000Header {
  const start = codestreamStart(bytes);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (start + 4 > bytes.length || view.getUint16(start) !== SOC || view.getUint16(start + 2) !== SIZ) {
    throw new ImageDecodeError("JPEG 2000 corrupt: the codestream does not start with SOC and SIZ");
  }
  const at = start + 4;
  if (at + 38 > bytes.length) throw new ImageDecodeError("JPEG 2000 truncated: no complete SIZ marker segment");
  const length = view.getUint16(at);
  const components = view.getUint16(at + 36);
  if (components < 1 || length !== 38 + 3 * components || at + length > bytes.length) {
    throw new ImageDecodeError(`JPEG 2000 corrupt: a SIZ segment of ${length} bytes for ${components} components`);
  }
  const width = view.getUint32(at + 4) - view.getUint32(at + 12);
  const height = view.getUint32(at + 8) - view.getUint32(at + 16);
  if (width < 1 || height < 1) throw new ImageDecodeError(`JPEG 2000 corrupt: an image area of ${width}x${height}`);
  const first = bytes[at + 38]!;
  let subsampled = false;
  for (let c = 0; c < components; c++) {
    const entry = at + 38 + 3 * c;
    if (bytes[entry] !== first) throw new ImageDecodeError("JPEG 2000 with components of different depths is not supported", "unsupported");
    if (bytes[entry + 1] !== 1 || bytes[entry + 2] !== 1) subsampled = true;
  }
  return { width, height, components, precision: (first & 0x7f) + 1, signed: (first & 0x80) !== 0, subsampled, start };
}

/** A complete codestream ends with its EOC marker; anything else was cut off. */
export function jpeg2000EndsWithEoc(bytes: Uint8Array): boolean {
  const n = bytes.length;
  return n >= 2 && ((bytes[n - 2]! << 8) | bytes[n - 1]!) === EOC;
}

/** 0 for a raw codestream; for a JP2 file, where its 'jp2c' box's contents begin. */
function codestreamStart(bytes: Uint8Array): number {
  if (bytes.length >= 2 && ((bytes[0]! << 8) | bytes[1]!) === SOC) return 0;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  for (let boxes = 0; boxes < MAX_JP2_BOXES && at + 8 <= bytes.length; boxes++) {
    let size = view.getUint32(at);
    const type = view.getUint32(at + 4);
    let header = 8;
    if (size === 1) {
      if (at + 16 > bytes.length) break;
      size = Number(view.getBigUint64(at + 8));
      header = 16;
    } else if (size === 0) {
      size = bytes.length - at;
    }
    if (type === 0x6a703263) return at + header; // 'jp2c'
    if (size < header) break;
    at += size;
  }
  throw new ImageDecodeError("JPEG 2000 corrupt: neither a codestream nor a JP2 file with one");
}
