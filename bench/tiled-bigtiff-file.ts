// Writes a region source as an uncompressed, tiled BigTIFF, a band of tiles at a time: the layout
// whole-slide scanners and stitchers write (TIFF 6.0 tiles; BigTIFF, Adobe's TIFF extension with
// 64-bit offsets, since such files pass 4 GiB). 16-bit samples by default (a fluorescence mosaic,
// one channel), or 8-bit (an RGB brightfield slide), all the source's channels interleaved. The
// encoding is the fixture writer's streamed form (test/fixtures/tiff-writer.ts, streamTiledTiff);
// this file only reads the source's bands and writes them to disk. For bench:big-service,
// bench:fanout and bench:he-slide.
import { closeSync, openSync, writeSync } from "node:fs";
import type { RegionSource } from "../gpu-runner/engine/blocks/region-source.ts";
import { streamTiledTiff } from "../test/fixtures/tiff-writer.ts";

interface TiledBigTiffOptions {
  tile?: number;
  kind?: "uint8" | "uint16";
}

/**
 * A band's region is read this many samples at a time at most: a source renders Float32 planes, 4
 * bytes a sample, where the file keeps 1 or 2, so a 32768-px-wide RGB band read at once would cost
 * 200 MB instead of the 50 MB its 8-bit samples need.
 */
const READ_SAMPLES = 8 * 2 ** 20;

/** Writes `source` to `path`, every channel, rounded and clamped to the kind's samples; returns the file's size. */
export async function writeTiledBigTiff(path: string, source: RegionSource, options: TiledBigTiffOptions = {}): Promise<number> {
  const { width, height, channels } = source;
  const tile = options.tile ?? 512;
  const kind = options.kind ?? "uint16";
  const max = kind === "uint8" ? 255 : 65_535;
  // Whole tiles per read, so a tiled source decodes each of its own tiles once.
  const readWidth = Math.max(tile, Math.floor(READ_SAMPLES / (tile * channels * tile)) * tile);
  const fd = openSync(path, "w");
  try {
    return await streamTiledTiff(
      { width, height, samplesPerPixel: channels, kind, tile: { width: tile, height: tile } },
      async (y, rows) => {
        const band = kind === "uint8" ? new Uint8Array(width * rows * channels) : new Uint16Array(width * rows * channels);
        for (let x0 = 0; x0 < width; x0 += readWidth) {
          const w = Math.min(readWidth, width - x0);
          const { data } = await source.readRegion(x0, y, w, rows);
          // Planar as read, interleaved as a chunky TIFF stores it.
          for (let c = 0; c < channels; c++)
            for (let r = 0; r < rows; r++) {
              const from = (c * rows + r) * w;
              let to = (r * width + x0) * channels + c;
              for (let x = 0; x < w; x++, to += channels) band[to] = Math.min(max, Math.max(0, Math.round(data[from + x]!)));
            }
        }
        return band;
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
