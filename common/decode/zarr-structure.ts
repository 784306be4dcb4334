// An OME-Zarr store uploaded as a ZIP, read through header-parse.ts requests: the ZIP's directory,
// then the group whose attributes hold the multiscales (the shallowest, wherever the archive put
// the store's folder), then each level's array metadata. schema/image-formats/ome-zarr.ts says what
// the documents mean; no chunk is read here.
import {
  ImageDecodeError,
  MAX_ZARR_METADATA_BYTES,
  maxStoredChunkBytes,
  multiscaleOf,
  type PixelSize,
  type ZarrArray,
  type ZarrAxes,
  type ZarrMultiscale,
  zarrArrayV2,
  zarrArrayV3,
  zarrAxes,
  zarrPixelSize,
} from "../../schema/image-formats/index.ts";
import type { Parse } from "./header-parse.ts";
import { inflateZipEntry, type ZipEntry, zipDataStart } from "./zip-directory.ts";

/** Levels of a pyramid whose metadata is read for their sizes: pyramids have a handful. */
const MAX_LEVELS = 32;

export interface ZarrStructure {
  /** Zarr v2 (OME-NGFF 0.4) or v3 (0.5). */
  version: 2 | 3;
  entries: Map<string, ZipEntry>;
  multiscale: ZarrMultiscale;
  /** The full resolution's array, and the ZIP folder its chunks are under (ending in "/"). */
  array: ZarrArray;
  arrayFolder: string;
  axes: ZarrAxes;
  /** The reduced levels' sizes, in the datasets' order (OME-NGFF: largest first). */
  levels: { width: number; height: number }[];
  pixelSize: PixelSize | null;
}

/**
 * The OME-Zarr image a ZIP's `entries` hold, or null when they hold none (a DICOM series, anything
 * else): `array` is dataset `level`'s (0, the full resolution, unless a reduced level is opened).
 */
export function* readZarrStructure(entries: Map<string, ZipEntry>, level = 0): Parse<ZarrStructure | null> {
  const groups = [...entries.keys()].filter((name) => /(^|\/)(\.zattrs|zarr\.json)$/.test(name)).sort((a, b) => a.split("/").length - b.split("/").length);
  for (const name of groups) {
    const document = yield* readJsonEntry(entries, name);
    const v3 = name.endsWith("zarr.json");
    const multiscale = multiscaleOf(v3 ? (document as { attributes?: unknown }).attributes : document);
    if (!multiscale) continue;
    const root = name.slice(0, name.lastIndexOf("/") + 1);
    const arrayOf = function* (path: string): Parse<ZarrArray> {
      const folder = `${root}${path.replace(/\/$/, "")}/`;
      const meta = yield* readJsonEntry(entries, `${folder}${v3 ? "zarr.json" : ".zarray"}`);
      return v3 ? zarrArrayV3(meta) : zarrArrayV2(meta);
    };
    const dataset = multiscale.datasets[level];
    if (!dataset) throw new RangeError(`level ${level} does not exist (the store has ${multiscale.datasets.length} datasets)`);
    const array = yield* arrayOf(dataset.path);
    const axes = zarrAxes(multiscale, array);
    const arrayFolder = `${root}${dataset.path.replace(/\/$/, "")}/`;
    // Every chunk's stored size is in the ZIP's directory: one that claims more than its chunk can
    // store (a ZIP entry that inflates past it) is refused before any is read.
    const chunkBytes = array.chunks.reduce((p, n) => p * n, array.dataType.bytes);
    for (const [name, entry] of entries) {
      if (name.startsWith(arrayFolder) && Math.max(entry.size, entry.compressedSize) > maxStoredChunkBytes(chunkBytes)) {
        throw new ImageDecodeError(
          `OME-Zarr chunk ${name} stores ${Math.max(entry.size, entry.compressedSize)} bytes, more than a chunk of ${chunkBytes} bytes can: file corrupt or forged`,
        );
      }
    }
    const levels: { width: number; height: number }[] = [];
    for (const dataset of multiscale.datasets.slice(1, MAX_LEVELS)) {
      const level = yield* arrayOf(dataset.path);
      levels.push({ width: level.shape[axes.x]!, height: level.shape[axes.y]! });
    }
    return {
      version: v3 ? 3 : 2,
      entries,
      multiscale,
      array,
      arrayFolder,
      axes,
      levels,
      pixelSize: zarrPixelSize(multiscale, axes),
    };
  }
  return null;
}

/** A metadata document of the store, parsed; stored or deflated, at most MAX_ZARR_METADATA_BYTES. */
function* readJsonEntry(entries: Map<string, ZipEntry>, name: string): Parse<unknown> {
  const entry = entries.get(name);
  if (!entry) throw new ImageDecodeError(`OME-Zarr metadata invalid: the archive has no ${name}`);
  if (entry.size > MAX_ZARR_METADATA_BYTES || entry.compressedSize > MAX_ZARR_METADATA_BYTES) {
    throw new ImageDecodeError(`OME-Zarr ${name} is larger than the ${MAX_ZARR_METADATA_BYTES} bytes a metadata document may have`, "too-large");
  }
  const start = zipDataStart(entry, yield { offset: entry.localHeader, length: 30, what: `the ZIP entry ${name}` });
  const stored = yield { offset: start, length: entry.compressedSize, what: `the ZIP entry ${name}` };
  const bytes = inflateZipEntry(entry, stored, MAX_ZARR_METADATA_BYTES, name);
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new ImageDecodeError(`OME-Zarr metadata invalid: ${name} is not JSON`);
  }
}
