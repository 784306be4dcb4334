// Writes a region source as an uncompressed, tiled, 16-bit BigTIFF, a band of tiles at a time:
// the layout whole-slide scanners and stitchers write (TIFF 6.0 tiles; BigTIFF, Adobe's TIFF
// extension with 64-bit offsets, since such files pass 4 GiB). The encoding is the fixture
// writer's streamed form (test/fixtures/tiff-writer.ts, streamTiledTiff); this file only reads the
// source's bands and writes them to disk. For bench:big-service.
import { closeSync, openSync, writeSync } from "node:fs";
import type { RegionSource } from "../gpu-runner/engine/blocks/region-source.ts";
import { streamTiledTiff } from "../test/fixtures/tiff-writer.ts";

/** Writes `source`'s first channel to `path`, rounded to 16-bit samples; returns the file's size. */
export async function writeTiledBigTiff(path: string, source: RegionSource, tile = 512): Promise<number> {
  const { width, height } = source;
  const fd = openSync(path, "w");
  try {
    return await streamTiledTiff(
      { width, height, samplesPerPixel: 1, kind: "uint16", tile: { width: tile, height: tile } },
      async (y, rows) => {
        const band = (await source.readRegion(0, y, width, rows)).data;
        return Uint16Array.from({ length: width * rows }, (_, i) => Math.min(65_535, Math.max(0, band[i]!)));
      },
      (bytes) => {
        writeSync(fd, bytes);
      },
      { bigTiff: true },
    );
  } finally {
    closeSync(fd);
  }
}
