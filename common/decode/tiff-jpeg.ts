// JPEG-compressed TIFF blocks (compression 7, TIFF Technical Note 2), as slide scanners and
// tifffile write them: each strip or tile is a JPEG stream, usually abbreviated, its quantisation
// and Huffman tables kept once in the JPEGTables tag. Photometric YCbCr (6) is converted to RGB by
// the JPEG decoder; photometric RGB (2) means the components are RGB already (libtiff and tifffile
// read them so, Aperio's SVS files rely on it).
import jpeg from "jpeg-js";
import { ImageDecodeError, jpegFrameFits, MAX_TIFF_BLOCK_BYTES } from "../../schema/image-formats/index.ts";
import { readFrame } from "./jpeg.ts";

/** The block's stream with the page's tables in front (SOI and their segments, compactJpegTables' form), then the block after its SOI. */
function withTables(block: Uint8Array, tables: Uint8Array | undefined): Uint8Array {
  if (!tables || tables.length <= 2 || block.length < 2 || block[0] !== 0xff || block[1] !== 0xd8) return block;
  const stream = new Uint8Array(tables.length + block.length - 2);
  stream.set(tables);
  stream.set(block.subarray(2), tables.length);
  return stream;
}

export interface JpegBlockShape {
  /** Pixels per row of the block (the frame's width). */
  columns: number;
  /** Rows the block must hold, and at most (a bottom strip may be written short or full). */
  rows: number;
  maxRows: number;
  /** Samples per pixel in the block: 1 (gray, or one plane) or 3. */
  samples: number;
  photometric: number;
}

/** Decodes one block to `columns × rows × samples` interleaved bytes. */
export function decodeJpegBlock(block: Uint8Array, tables: Uint8Array | undefined, shape: JpegBlockShape): Uint8Array {
  const { columns, rows, maxRows, samples } = shape;
  const stream = withTables(block, tables);
  let frame: ReturnType<typeof readFrame>;
  try {
    frame = readFrame(stream);
  } catch (error) {
    if (error instanceof ImageDecodeError) throw new ImageDecodeError(`TIFF JPEG block: ${error.message}`, error.kind);
    throw error;
  }
  // Checked before jpeg-js allocates the frame: a block's stream may claim any size.
  if (frame.width !== columns || frame.height < rows || frame.height > maxRows || frame.components !== samples) {
    throw new ImageDecodeError(
      `TIFF JPEG block corrupt: a ${frame.width}x${frame.height} frame of ${frame.components} components in a ${columns}x${rows} block of ${samples} samples`,
    );
  }
  if (!jpegFrameFits(frame.width, frame.height, stream.length - frame.end)) {
    throw new ImageDecodeError(`TIFF JPEG block truncated: ${stream.length - frame.end} bytes of data cannot hold a ${frame.width}x${frame.height} frame`);
  }
  let decoded: { width: number; height: number; data: Uint8Array };
  try {
    decoded = jpeg.decode(stream, {
      useTArray: true,
      formatAsRGBA: false,
      tolerantDecoding: false,
      colorTransform: shape.photometric === 6,
      maxResolutionInMP: (frame.width * frame.height) / 1e6 + 1,
      maxMemoryUsageInMB: (4 * MAX_TIFF_BLOCK_BYTES) / 2 ** 20,
    });
  } catch (error) {
    throw new ImageDecodeError(`TIFF JPEG block corrupt or truncated: ${(error as Error).message}`);
  }
  // jpeg-js gives RGB triples, a gray frame as three equal samples.
  const pixels = columns * rows;
  if (decoded.data.length < pixels * 3) throw new ImageDecodeError("TIFF JPEG block decoded to an unexpected layout");
  const out = new Uint8Array(pixels * samples);
  if (samples === 3) out.set(decoded.data.subarray(0, pixels * 3));
  else for (let i = 0; i < pixels; i++) out[i] = decoded.data[i * 3]!;
  return out;
}
