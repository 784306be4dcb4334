// Tiles stored as JPEG streams: a TIFF's JPEG-compressed blocks (compression 7, TIFF Technical
// Note 2), as slide scanners and tifffile write them, usually abbreviated with their quantisation
// and Huffman tables kept once in the JPEGTables tag; and a DICOM slide's JPEG frames, complete
// streams. YCbCr components are converted to RGB by the JPEG decoder; components that are RGB
// already (TIFF photometric 2, DICOM RGB) are kept as they are (libtiff and tifffile read them so,
// Aperio's SVS files rely on it). An NDPI's restart intervals are decoded here too, as tiles.
import jpeg from "jpeg-js";
import { ImageDecodeError, jpegFrameFits, MAX_TIFF_BLOCK_BYTES } from "../../schema/image-formats/index.ts";
import { readFrame } from "./jpeg.ts";
import { checkTileDeclares, type TileShape, tileHeader } from "./tile-shape.ts";

/** The block's stream with the page's tables in front (SOI and their segments, compactJpegTables' form), then the block after its SOI. */
function withTables(block: Uint8Array, tables: Uint8Array | undefined): Uint8Array {
  if (!tables || tables.length <= 2 || block.length < 2 || block[0] !== 0xff || block[1] !== 0xd8) return block;
  const stream = new Uint8Array(tables.length + block.length - 2);
  stream.set(tables);
  stream.set(block.subarray(2), tables.length);
  return stream;
}

interface JpegTileShape extends TileShape {
  /** The components are YCbCr, to be turned into RGB. */
  ycbcr: boolean;
}

/** Decodes one tile to `columns × rows × samples` interleaved bytes; `tables` are a TIFF page's JPEGTables. */
export function decodeJpegTile(block: Uint8Array, tables: Uint8Array | undefined, shape: JpegTileShape): Uint8Array {
  return decodeJpegStream(withTables(block, tables), shape);
}

/**
 * Decodes one tile of an NDPI's restart intervals (ndpi-tiles.ts): their entropy-coded data behind
 * `header`, SOI to SOS with the tile's frame size. The marker that ends the data in the file (the
 * next interval's restart, or the strip's EOI) gives way to the tile's own EOI.
 */
export function decodeRestartTile(data: Uint8Array, header: Uint8Array, shape: JpegTileShape): Uint8Array {
  const last = data.length >= 2 && data[data.length - 2] === 0xff ? data[data.length - 1]! : -1;
  const end = (last >= 0xd0 && last <= 0xd7) || last === 0xd9 ? data.length - 2 : data.length;
  const stream = new Uint8Array(header.length + end + 2);
  stream.set(header);
  stream.set(data.subarray(0, end), header.length);
  stream.set([0xff, 0xd9], header.length + end);
  return decodeJpegStream(stream, shape);
}

function decodeJpegStream(stream: Uint8Array, shape: JpegTileShape): Uint8Array {
  const { columns, rows, samples, what } = shape;
  const frame = tileHeader(shape, () => readFrame(stream));
  // Checked before jpeg-js allocates the frame: a block's stream may claim any size.
  checkTileDeclares(shape, frame, "frame");
  if (!jpegFrameFits(frame.width, frame.height, stream.length - frame.end)) {
    throw new ImageDecodeError(`${what} truncated: ${stream.length - frame.end} bytes of data cannot hold a ${frame.width}x${frame.height} frame`);
  }
  let decoded: { width: number; height: number; data: Uint8Array };
  try {
    decoded = jpeg.decode(stream, {
      useTArray: true,
      formatAsRGBA: false,
      tolerantDecoding: false,
      colorTransform: shape.ycbcr,
      maxResolutionInMP: (frame.width * frame.height) / 1e6 + 1,
      maxMemoryUsageInMB: (4 * MAX_TIFF_BLOCK_BYTES) / 2 ** 20,
    });
  } catch (error) {
    throw new ImageDecodeError(`${what} corrupt or truncated: ${(error as Error).message}`);
  }
  // jpeg-js gives RGB triples, a gray frame as three equal samples.
  const pixels = columns * rows;
  if (decoded.data.length < pixels * 3) throw new ImageDecodeError(`${what} decoded to an unexpected layout`);
  const out = new Uint8Array(pixels * samples);
  if (samples === 3) out.set(decoded.data.subarray(0, pixels * 3));
  else for (let i = 0; i < pixels; i++) out[i] = decoded.data[i * 3]!;
  return out;
}
