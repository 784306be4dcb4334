// Ventana BIF scanners store a level's tiles as the camera took them: each overlaps its right and
// upper neighbours by some pixels, and the level-0 page's XMP says by how much. Its <EncodeInfo>
// holds, per scanned area (<ImageInfo AOIScanned="1" NumCols NumRows Width Height>), one
// <TileJointInfo Direction="RIGHT"|"UP" Tile1 Tile2 OverlapX OverlapY Confidence> per joint.
// As OpenSlide's Ventana driver reads them (openslide-vendor-ventana.c), the tiles are laid out on
// one grid whose step (the tile advance) is the tile size less the joints' overlap averaged with
// their confidence as weight: OverlapX of the RIGHT joints across, OverlapY of the UP joints down.
// A tile then covers the pixels from its own step to the next one's; the next tile (to the right,
// below) is what shows where two overlap, as OpenSlide paints them in that order.
import { ImageDecodeError } from "./errors.ts";
import { attributesOf as attributes } from "./calibration.ts";

/** The step from one tile to the next, in full-resolution pixels (fractional: an average). */
export interface TileAdvance {
  x: number;
  y: number;
}

/**
 * The level-0 page's tile advance, or null where its XMP lists no joints (a Ventana TIFF without
 * areas, or a scan whose tiles do not overlap). A joint naming a tile outside its area, or overlaps
 * that would leave gaps or overlap more than half a tile, refuse the file.
 */
export function ventanaTileAdvance(xmp: string | undefined, tile: { width: number; height: number }): TileAdvance | null {
  const encodeInfo = /<EncodeInfo\b[\s\S]*?<\/EncodeInfo>/.exec(xmp ?? "")?.[0];
  if (!encodeInfo) return null;
  const weighted = { x: 0, y: 0 };
  const weights = { x: 0, y: 0 };
  for (const [, head, body] of encodeInfo.matchAll(/<ImageInfo\b([^>]*?)(?:\/>|>([\s\S]*?)<\/ImageInfo>)/g)) {
    const area = attributes(head!);
    if (Number(area.AOIScanned) !== 1) continue;
    const [width, height, columns, rows] = [area.Width, area.Height, area.NumCols, area.NumRows].map(Number);
    if (width !== tile.width || height !== tile.height) {
      throw new ImageDecodeError(
        `Ventana BIF corrupt: its stitching information describes ${width}x${height} tiles, the level-0 page stores ${tile.width}x${tile.height}`,
      );
    }
    const tiles = columns! * rows!;
    for (const [, joint] of (body ?? "").matchAll(/<TileJointInfo\b([^>]*)\/?>/g)) {
      const { Direction, Tile1, Tile2, OverlapX, OverlapY, Confidence } = attributes(joint!);
      for (const number of [Number(Tile1), Number(Tile2)]) {
        if (!Number.isInteger(number) || number < 1 || number > tiles) {
          throw new ImageDecodeError(`Ventana BIF corrupt: a tile joint names tile ${number}, outside its area's ${tiles} tiles`);
        }
      }
      const confidence = Number(Confidence);
      if (!(confidence > 0)) continue;
      const axis = Direction === "RIGHT" ? "x" : Direction === "UP" ? "y" : null;
      const overlap = Number(axis === "x" ? OverlapX : OverlapY);
      if (axis === null || !Number.isFinite(overlap)) continue;
      weighted[axis] += confidence * overlap;
      weights[axis] += confidence;
    }
  }
  if (weights.x === 0 && weights.y === 0) return null;
  const advance = {
    x: weights.x > 0 ? tile.width - weighted.x / weights.x : tile.width,
    y: weights.y > 0 ? tile.height - weighted.y / weights.y : tile.height,
  };
  if (advance.x > tile.width || advance.y > tile.height || advance.x < tile.width / 2 || advance.y < tile.height / 2) {
    throw new ImageDecodeError(
      `Ventana BIF corrupt: its tiles overlap by ${(tile.width - advance.x).toFixed(1)} x ${(tile.height - advance.y).toFixed(1)} pixels, outside 0 to half a tile`,
    );
  }
  return advance;
}
