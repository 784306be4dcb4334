// Writes a region source as an uncompressed, tiled, 16-bit BigTIFF, a band of tiles at a time:
// the layout whole-slide scanners and stitchers write (TIFF 6.0 tiles; BigTIFF, Adobe's TIFF
// extension with 64-bit offsets, since such files pass 4 GiB). Uncompressed tiles have known sizes,
// so the directory is written first and the pixels stream after it. For bench:big-service.
import { closeSync, openSync, writeSync } from "node:fs";
import type { RegionSource } from "../gpu-runner/engine/blocks/region-source.ts";

const SHORT = 3,
  LONG = 4,
  LONG8 = 16;

/** Writes `source`'s first channel to `path`, rounded to 16-bit samples; returns the file's size. */
export async function writeTiledBigTiff(path: string, source: RegionSource, tile = 512): Promise<number> {
  const { width, height } = source;
  const across = Math.ceil(width / tile);
  const down = Math.ceil(height / tile);
  const tiles = across * down;
  const tileBytes = tile * tile * 2;
  const entries: [tag: number, type: number, count: number, value: number][] = [
    [256, LONG, 1, width],
    [257, LONG, 1, height],
    [258, SHORT, 1, 16],
    [259, SHORT, 1, 1], // no compression
    [262, SHORT, 1, 1], // BlackIsZero
    [277, SHORT, 1, 1],
    [284, SHORT, 1, 1], // chunky
    [322, LONG, 1, tile],
    [323, LONG, 1, tile],
    [324, LONG8, tiles, 0], // TileOffsets, out of line
    [325, LONG8, tiles, 0], // TileByteCounts, out of line
    [339, SHORT, 1, 1], // unsigned integers
  ];
  const ifdAt = 16;
  const offsetsAt = ifdAt + 8 + entries.length * 20 + 8;
  const countsAt = offsetsAt + tiles * 8;
  const pixelsAt = countsAt + tiles * 8;
  const head = new DataView(new ArrayBuffer(pixelsAt));
  head.setUint16(0, 0x4949, true); // "II"
  head.setUint16(2, 43, true); // BigTIFF
  head.setUint16(4, 8, true);
  head.setBigUint64(8, BigInt(ifdAt), true);
  head.setBigUint64(ifdAt, BigInt(entries.length), true);
  entries.forEach(([tag, type, count, value], i) => {
    const at = ifdAt + 8 + i * 20;
    head.setUint16(at, tag, true);
    head.setUint16(at + 2, type, true);
    head.setBigUint64(at + 4, BigInt(count), true);
    if (tag === 324) head.setBigUint64(at + 12, BigInt(offsetsAt), true);
    else if (tag === 325) head.setBigUint64(at + 12, BigInt(countsAt), true);
    else if (type === SHORT) head.setUint16(at + 12, value, true);
    else head.setUint32(at + 12, value, true);
  });
  for (let t = 0; t < tiles; t++) {
    head.setBigUint64(offsetsAt + t * 8, BigInt(pixelsAt + t * tileBytes), true);
    head.setBigUint64(countsAt + t * 8, BigInt(tileBytes), true);
  }
  const fd = openSync(path, "w");
  try {
    writeSync(fd, new Uint8Array(head.buffer));
    const out = new Uint16Array(tile * tile);
    for (let row = 0; row < down; row++) {
      const y0 = row * tile;
      const rows = Math.min(tile, height - y0);
      const band = (await source.readRegion(0, y0, width, rows)).data;
      for (let column = 0; column < across; column++) {
        const x0 = column * tile;
        const columns = Math.min(tile, width - x0);
        out.fill(0); // edge tiles are padded: TIFF tiles are always whole
        for (let y = 0; y < rows; y++) {
          for (let x = 0; x < columns; x++) out[y * tile + x] = Math.min(65_535, Math.max(0, band[y * width + x0 + x]!));
        }
        writeSync(fd, new Uint8Array(out.buffer));
      }
    }
  } finally {
    closeSync(fd);
  }
  return pixelsAt + tiles * tileBytes;
}
