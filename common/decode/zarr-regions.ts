// Rectangles of a zipped OME-Zarr store read through ranged reads: its structure first
// (zarr-structure.ts), then each region reads the local headers and the data of only the chunks it
// meets (the first time point and focal plane; the channels asked for), decodes them (zarr-chunks.ts)
// and keeps them for the next regions. A chunk the store does not hold reads as its fill value.
import { ImageDecodeError, maxStoredChunkBytes } from "../../schema/image-formats/index.ts";
import { BlockCache } from "./block-cache.ts";
import { cachedSource, type RangeRead, readRanges } from "./byte-ranges.ts";
import type { ByteSource } from "./byte-source.ts";
import { parseSource } from "./header-parse.ts";
import { checkRegion, type ImageRegions } from "./region.ts";
import { decodeZarrChunk } from "./zarr-chunks.ts";
import { readZarrStructure, type ZarrStructure } from "./zarr-structure.ts";
import { inflateZipEntry, zipDataStart } from "./zip-directory.ts";

/** Decoded chunks kept for the next regions (neighbouring regions share edge chunks). */
const CHUNK_CACHE_BYTES = 64 * 1024 * 1024;

/** The store's dataset `level` (0, the full resolution; readLevel opens the others), as readZarrStructure found it. */
export function openZarrRegions(source: ByteSource, structure: ZarrStructure, level = 0): ImageRegions {
  const { array, axes, entries, arrayFolder } = structure;
  const image = { width: array.shape[axes.x]!, height: array.shape[axes.y]!, channels: axes.c === null ? 1 : array.shape[axes.c]! };
  const { bytes, format, littleEndian } = array.dataType;
  const chunkBytes = array.chunks.reduce((p, n) => p * n, bytes);
  // C order: the last dimension fastest.
  const strides = array.chunks.map((_, k) => array.chunks.slice(k + 1).reduce((p, n) => p * n, 1));
  const read = sampleReader(bytes, format, littleEndian);
  const cache = new BlockCache(CHUNK_CACHE_BYTES);
  const dataStarts = new Map<string, number>();

  return {
    ...image,
    bitDepth: bytes * 8,
    sampleFormat: format,
    format: "zarr",
    pages: 1,
    levels: level === 0 ? structure.levels : [],
    ...(level === 0 &&
      structure.levels.length > 0 && {
        async readLevel(index: number) {
          const reduced = await parseSource(readZarrStructure(entries, index + 1), cachedSource(source));
          return openZarrRegions(source, reduced!, index + 1);
        },
      }),
    async readRegion(x, y, w, h, options) {
      const wanted = checkRegion(image, x, y, w, h, options);
      const out = new Float32Array(wanted.length * w * h);
      // The chunks the region meets, each with the channels it gives.
      const needs = new Map<string, { indices: number[]; channels: { target: number; channel: number }[] }>();
      const [cx, cy] = [array.chunks[axes.x]!, array.chunks[axes.y]!];
      for (let ty = Math.floor(y / cy); ty <= Math.floor((y + h - 1) / cy); ty++) {
        for (let tx = Math.floor(x / cx); tx <= Math.floor((x + w - 1) / cx); tx++) {
          wanted.forEach((channel, target) => {
            const indices = array.shape.map(() => 0);
            indices[axes.x] = tx;
            indices[axes.y] = ty;
            if (axes.c !== null) indices[axes.c] = Math.floor(channel / array.chunks[axes.c]!);
            const key = arrayFolder + array.chunkKey(indices);
            let need = needs.get(key);
            if (!need) needs.set(key, (need = { indices, channels: [] }));
            need.channels.push({ target, channel });
          });
        }
      }
      const missing: string[] = [];
      const headers: RangeRead[] = [];
      for (const key of needs.keys()) {
        const entry = entries.get(key);
        if (!entry) continue;
        if (cache.get(key) || dataStarts.has(key)) continue;
        headers.push({ offset: entry.localHeader, length: 30, use: (header) => dataStarts.set(key, zipDataStart(entry, header)) });
      }
      await readRanges(source, headers);
      const stored = new Map<string, Uint8Array>();
      const reads: RangeRead[] = [];
      for (const key of needs.keys()) {
        const entry = entries.get(key);
        if (!entry) {
          missing.push(key);
          continue;
        }
        if (cache.get(key)) continue;
        const start = dataStarts.get(key)!;
        if (start + entry.compressedSize > source.size) throw new ImageDecodeError(`ZIP corrupt: chunk ${key} runs past the end of the file`);
        // A chunk deflated by the ZIP as well is inflated first, to at most what its codec's output and header can take.
        reads.push({
          offset: start,
          length: entry.compressedSize,
          use: (data) => stored.set(key, inflateZipEntry(entry, data, maxStoredChunkBytes(chunkBytes), key)),
        });
      }
      await readRanges(source, reads);
      for (const [key, need] of needs) {
        if (missing.includes(key)) {
          copyChunk(null, need);
          continue;
        }
        let chunk = cache.get(key);
        if (!chunk) {
          chunk = await decodeZarrChunk(stored.get(key)!, array.codec, chunkBytes, `chunk ${key}`);
          cache.set(key, chunk);
        }
        copyChunk(chunk, need);
      }
      return { width: w, height: h, channels: wanted.length, bitDepth: bytes * 8, sampleFormat: format, data: out };

      /** The part of a chunk inside the region, into `out`; a missing chunk as the fill value. */
      function copyChunk(chunk: Uint8Array | null, need: { indices: number[]; channels: { target: number; channel: number }[] }): void {
        const view = chunk && new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
        const [left, top] = [need.indices[axes.x]! * cx, need.indices[axes.y]! * cy];
        const [xs, xe] = [Math.max(x, left), Math.min(x + w, left + cx)];
        const [ys, ye] = [Math.max(y, top), Math.min(y + h, top + cy)];
        for (const { target, channel } of need.channels) {
          const channelAt = axes.c === null ? 0 : (channel - need.indices[axes.c]! * array.chunks[axes.c]!) * strides[axes.c]!;
          for (let row = ys; row < ye; row++) {
            const at = (target * h + (row - y)) * w - x;
            const rowAt = channelAt + (row - top) * strides[axes.y]!;
            for (let col = xs; col < xe; col++) {
              out[at + col] = view ? read(view, (rowAt + (col - left) * strides[axes.x]!) * bytes) : array.fill;
            }
          }
        }
      }
    },
  };
}

function sampleReader(bytes: 1 | 2 | 4, format: "uint" | "int" | "float", le: boolean): (view: DataView, at: number) => number {
  if (format === "float") return (v, at) => v.getFloat32(at, le);
  if (bytes === 1) return format === "int" ? (v, at) => v.getInt8(at) : (v, at) => v.getUint8(at);
  if (bytes === 2) return format === "int" ? (v, at) => v.getInt16(at, le) : (v, at) => v.getUint16(at, le);
  return format === "int" ? (v, at) => v.getInt32(at, le) : (v, at) => v.getUint32(at, le);
}
