// The dashboard's preview of an image as one stored object: a small pyramid of PNG tiles, so the
// viewer fetches only the tiles it shows (R2 range reads), however large the image. Written by the
// runner (gpu-runner/engine/preview.ts), read by the worker (worker/services/previews.ts).
//
//   bytes 0..3   "CSPT"
//   bytes 4..7   index length L, uint32 little-endian
//   bytes 8..8+L the index, JSON (PreviewIndex)
//   then         the tiles' PNG bytes; each tile's offset counts from the end of the index
import { z } from "zod";

const PREVIEW_TILES_MAGIC = "CSPT";
export const PREVIEW_TILE_SIDE = 512;
/** Header plus index stay below this, so one range read gets both. */
export const PREVIEW_INDEX_MAX_BYTES = 64 * 1024;

const previewLevel = z.object({
  /** Image pixels per preview pixel, along each axis (a power of two). */
  factor: z.number().int().min(1),
  width: z.number().int().min(1),
  height: z.number().int().min(1),
  columns: z.number().int().min(1),
  rows: z.number().int().min(1),
  /** [offset, length] of each tile, row by row. */
  tiles: z.array(z.tuple([z.number().int().min(0), z.number().int().min(1)])),
});

const previewIndex = z.object({
  /** The image's size in pixels; every level covers all of it. */
  width: z.number().int().min(1),
  height: z.number().int().min(1),
  tile: z.number().int().min(1),
  /** Finest first. */
  levels: z.array(previewLevel).min(1),
});

/**
 * An image's full-resolution level, made by a fanned-out prediction (schema/storage-keys.ts
 * imageFullPrefix): one tile archive per block core (one level of factor 1 covering the core, tiles
 * of `tile` from its corner), the cores tiling the image in grid order. Tile (c, r) of block b lies
 * at (b.x + c × tile, b.y + r × tile).
 */
export const fullResolutionManifest = z.object({
  width: z.number().int().min(1),
  height: z.number().int().min(1),
  tile: z.number().int().min(1),
  /** The grid's core side, which names the packs (imageFullTilesKey). */
  core_side: z.number().int().min(1),
  blocks: z.array(z.object({ x: z.number().int().min(0), y: z.number().int().min(0), width: z.number().int().min(1), height: z.number().int().min(1) })).min(1),
});

export type PreviewIndex = z.infer<typeof previewIndex>;
export type FullResolutionManifest = z.infer<typeof fullResolutionManifest>;
export type PreviewLevel = z.infer<typeof previewLevel>;

/** Where a level's tile lies in the stored object, or null if the level or tile does not exist. */
export function tileRange(index: PreviewIndex, dataStart: number, level: number, column: number, row: number): { offset: number; length: number } | null {
  const l = index.levels[level];
  if (!l || column < 0 || row < 0 || column >= l.columns || row >= l.rows) return null;
  const [offset, length] = l.tiles[row * l.columns + column]!;
  return { offset: dataStart + offset, length };
}

/** Header and index of a stored preview, from its first bytes (at least 8 + L of them). */
export function readPreviewHeader(head: Uint8Array): { index: PreviewIndex; dataStart: number } {
  const magic = new TextDecoder().decode(head.subarray(0, 4));
  if (magic !== PREVIEW_TILES_MAGIC || head.length < 8) throw new Error("not a preview tile archive");
  const length = new DataView(head.buffer, head.byteOffset, head.byteLength).getUint32(4, true);
  if (8 + length > head.length) throw new Error(`preview index of ${length} bytes is cut off`);
  const index = previewIndex.parse(JSON.parse(new TextDecoder().decode(head.subarray(8, 8 + length))));
  return { index, dataStart: 8 + length };
}

/** The archive's bytes: header, index and tiles, in one buffer for one upload. */
export function writePreviewArchive(index: Omit<PreviewIndex, "levels"> & { levels: Omit<PreviewLevel, "tiles">[] }, tiles: Uint8Array[][]): Uint8Array {
  let offset = 0;
  const levels = index.levels.map((level, i) => ({
    ...level,
    tiles: tiles[i]!.map((png) => {
      const range: [number, number] = [offset, png.length];
      offset += png.length;
      return range;
    }),
  }));
  const json = new TextEncoder().encode(JSON.stringify({ ...index, levels }));
  if (8 + json.length > PREVIEW_INDEX_MAX_BYTES) throw new Error(`preview index of ${json.length} bytes is over ${PREVIEW_INDEX_MAX_BYTES}`);
  const out = new Uint8Array(8 + json.length + offset);
  out.set(new TextEncoder().encode(PREVIEW_TILES_MAGIC), 0);
  new DataView(out.buffer).setUint32(4, json.length, true);
  out.set(json, 8);
  let at = 8 + json.length;
  for (const level of tiles) {
    for (const png of level) {
      out.set(png, at);
      at += png.length;
    }
  }
  return out;
}
