// What a compressed tile must declare before its decoder allocates anything: a TIFF block or a
// DICOM frame may claim any size in its own header (a JPEG frame, a JPEG 2000 codestream), so the
// header is read first and held to the tile's width, rows and samples.
import { ImageDecodeError } from "../../schema/image-formats/index.ts";

export interface TileShape {
  /** What the tile is, for errors ("TIFF JPEG block", "DICOM JPEG 2000 frame"). */
  what: string;
  /** Pixels per row of the tile. */
  columns: number;
  /** Rows the tile must hold, and at most (a bottom strip may be written short or full). */
  rows: number;
  maxRows: number;
  /** Samples per pixel: 1 (gray, or one plane) or 3. */
  samples: number;
}

/** The tile's header as `read` gives it, its refusals named after the tile. */
export function tileHeader<Header>(shape: TileShape, read: () => Header): Header {
  try {
    return read();
  } catch (error) {
    if (error instanceof ImageDecodeError) throw new ImageDecodeError(`${shape.what}: ${error.message}`, error.kind);
    throw error;
  }
}

/** Throws unless the header (`a 60000x128 codestream of 3 components`) declares the tile's own shape. */
export function checkTileDeclares(shape: TileShape, declared: { width: number; height: number; components: number }, called: "frame" | "codestream"): void {
  const { what, columns, rows, maxRows, samples } = shape;
  if (declared.width !== columns || declared.height < rows || declared.height > maxRows || declared.components !== samples) {
    throw new ImageDecodeError(
      `${what} corrupt: a ${declared.width}x${declared.height} ${called} of ${declared.components} components in a ${columns}x${rows} block of ${samples} samples`,
    );
  }
}
