// Tiles stored as JPEG 2000 codestreams: TIFF blocks as Aperio's scanners write them in SVS files
// (TCGA's slides among them), and a DICOM slide's JPEG 2000 frames. A codestream coding RGB through
// its own component transform is undone by the decoder; one coding Y, Cb and Cr as they are (Aperio
// 33003, DICOM YBR_FULL) is turned into RGB here, as OpenSlide does (openslide-decode-jp2k.c).
import { ImageDecodeError, jpeg2000EndsWithEoc, readJpeg2000Header } from "../../schema/image-formats/index.ts";
import { decodeJpeg2000 } from "./jpeg2000-codec.ts";
import { checkTileDeclares, type TileShape, tileHeader } from "./tile-shape.ts";

interface Jpeg2000TileShape extends TileShape {
  /** The decoded components are Y, Cb and Cr, to be turned into RGB. */
  ycbcr: boolean;
}

/** Decodes one tile to `columns × rows × samples` interleaved bytes. */
export function decodeJpeg2000Tile(block: Uint8Array, shape: Jpeg2000TileShape): Uint8Array {
  const { columns, rows, samples, what } = shape;
  const header = tileHeader(shape, () => readJpeg2000Header(block));
  // Checked before the decoder allocates: a block's codestream may declare any size.
  checkTileDeclares(shape, header, "codestream");
  if (header.precision > 8 || header.signed) {
    throw new ImageDecodeError(`${what} of ${header.signed ? "signed " : ""}${header.precision}-bit samples in an 8-bit image`);
  }
  if (header.subsampled) throw new ImageDecodeError(`${what}: subsampled components are not supported`, "unsupported");
  if (!jpeg2000EndsWithEoc(block)) throw new ImageDecodeError(`${what} truncated: its codestream does not end with an EOC marker`);
  const decoded = decodeJpeg2000(header.start === 0 ? block : block.subarray(header.start));
  const bytes = columns * rows * samples;
  if (decoded.width !== columns || decoded.components !== samples || decoded.samples.length < bytes) {
    throw new ImageDecodeError(`${what} decoded to an unexpected layout`);
  }
  const out = decoded.samples.subarray(0, bytes);
  if (shape.ycbcr && samples === 3) ycbcrToRgb(out);
  return out;
}

/** Full-range YCbCr (JFIF, ITU-T T.871) to RGB in place, rounded and clamped to bytes. */
function ycbcrToRgb(pixels: Uint8Array): void {
  for (let i = 0; i < pixels.length; i += 3) {
    const y = pixels[i]!;
    const cb = pixels[i + 1]! - 128;
    const cr = pixels[i + 2]! - 128;
    // Uint8Array stores clamp nothing; Math.round then the typed array's modulo would wrap, so clamp first.
    pixels[i] = clampByte(y + 1.402 * cr);
    pixels[i + 1] = clampByte(y - 0.344136 * cb - 0.714136 * cr);
    pixels[i + 2] = clampByte(y + 1.772 * cb);
  }
}

function clampByte(value: number): number {
  return value <= 0 ? 0 : value >= 255 ? 255 : Math.round(value);
}
