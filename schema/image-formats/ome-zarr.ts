// OME-Zarr images (OME-NGFF 0.4 on Zarr v2, 0.5 on Zarr v3), uploaded as a ZIP of the store: what
// the metadata says (the multiscales' axes, datasets and scale transforms; each array's shape,
// chunks, data type, codec and chunk keys), read from the JSON documents the store holds, and the
// limits on what a store may declare. common/decode/zarr-structure.ts finds the documents in the
// ZIP; the runner's reader (zarr-regions.ts) reads the chunks. Read from the OME-NGFF and Zarr v2/v3
// specifications.
import { micrometres, type PixelSize } from "./calibration.ts";
import { ImageDecodeError } from "./errors.ts";
import { checkRegionImageSize } from "./limits.ts";

/** Entries of an uploaded ZIP: a 100,000² slide in 512² chunks with its pyramid is about 51,000. */
export const MAX_ZIP_ENTRIES = 200_000;
/** Bytes of a ZIP's central directory read (within the upload probe's 16 MiB of reads). */
export const MAX_ZIP_DIRECTORY_BYTES = 12 * 1024 * 1024;
/** Bytes of one metadata document (.zattrs, .zarray, zarr.json), inflated. */
export const MAX_ZARR_METADATA_BYTES = 1024 * 1024;
/** Decoded bytes of one chunk: a 4096² chunk of 4-byte samples. */
const MAX_ZARR_CHUNK_BYTES = 64 * 1024 * 1024;

/**
 * The most bytes a chunk of `chunkBytes` decoded bytes may store: its codec's worst case is a few
 * bytes over the raw data (blosc's 16-byte header and block table, a zstd frame's raw blocks).
 */
export function maxStoredChunkBytes(chunkBytes: number): number {
  return chunkBytes + (chunkBytes >> 7) + 65_536;
}

export type ZarrCodec = "blosc" | "zstd" | "zlib" | "gzip" | null;

interface ZarrDataType {
  bytes: 1 | 2 | 4;
  format: "uint" | "int" | "float";
  littleEndian: boolean;
}

/** One array of the store (a resolution level), as its metadata declares it. */
export interface ZarrArray {
  shape: number[];
  chunks: number[];
  dataType: ZarrDataType;
  codec: ZarrCodec;
  /** The value of a chunk the store does not hold. */
  fill: number;
  /** The store key, under the array's own folder, of the chunk at `indices`. */
  chunkKey(indices: number[]): string;
}

interface ZarrAxis {
  name: string;
  type?: string;
  unit?: string;
}

/** The first multiscale image of a store: its axes, its levels' paths (full resolution first) and their scales. */
export interface ZarrMultiscale {
  axes: ZarrAxis[];
  datasets: { path: string; scale: number[] | null }[];
  /** A transform on the whole multiscale, applied after each dataset's. */
  scale: number[] | null;
}

const invalid = (why: string) => new ImageDecodeError(`OME-Zarr metadata invalid: ${why}`);
const unsupported = (what: string) => new ImageDecodeError(`OME-Zarr ${what} is not supported`, "unsupported");

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

function positiveIntegers(value: unknown, what: string): number[] {
  if (!Array.isArray(value) || value.length === 0 || !value.every((n) => Number.isSafeInteger(n) && n >= 1))
    throw invalid(`${what} is not a list of positive integers`);
  return value as number[];
}

function scaleOf(transforms: unknown): number[] | null {
  if (!Array.isArray(transforms)) return null;
  const scale = transforms.find((t) => isObject(t) && t.type === "scale");
  return isObject(scale) && Array.isArray(scale.scale) && scale.scale.every((n) => typeof n === "number" && n > 0) ? (scale.scale as number[]) : null;
}

/** The multiscales of a group's attributes (NGFF 0.4: `multiscales`; 0.5: `ome.multiscales`), or null if it has none. */
export function multiscaleOf(attributes: unknown): ZarrMultiscale | null {
  const holder = isObject(attributes) && isObject(attributes.ome) ? attributes.ome : attributes;
  const multiscales = isObject(holder) ? holder.multiscales : undefined;
  if (!Array.isArray(multiscales) || !isObject(multiscales[0])) return null;
  const first = multiscales[0];
  const axes = Array.isArray(first.axes)
    ? first.axes.map((a) => (typeof a === "string" ? { name: a } : isObject(a) && typeof a.name === "string" ? (a as unknown as ZarrAxis) : null))
    : // NGFF 0.3 and earlier had no axes: t, c, z, y, x.
      ["t", "c", "z", "y", "x"].map((name) => ({ name }));
  if (axes.some((a) => a === null)) throw invalid("an axis has no name");
  if (!Array.isArray(first.datasets) || first.datasets.length === 0) throw invalid("its multiscales list no datasets");
  const datasets = first.datasets.map((d) => {
    if (!isObject(d) || typeof d.path !== "string" || d.path.includes("..")) throw invalid("a dataset has no path");
    return { path: d.path, scale: scaleOf(d.coordinateTransformations) };
  });
  return { axes: axes as ZarrAxis[], datasets, scale: scaleOf(first.coordinateTransformations) };
}

/** `<u2`, `|u1`, `>f4`, ... (Zarr v2) */
function dataTypeV2(dtype: unknown): ZarrDataType {
  const match = typeof dtype === "string" ? /^([<>|])([uif])([124])$/.exec(dtype) : null;
  if (!match) throw unsupported(`data type ${JSON.stringify(dtype)}`);
  return dataType(match[2]!, Number(match[3]), match[1] !== ">");
}

function dataType(kind: string, bytes: number, littleEndian: boolean): ZarrDataType {
  const format = kind === "u" ? "uint" : kind === "i" ? "int" : "float";
  if (format === "float" && bytes !== 4) throw unsupported(`${bytes}-byte floats`);
  return { bytes: bytes as 1 | 2 | 4, format, littleEndian };
}

function codecOf(id: unknown): ZarrCodec {
  if (id === undefined || id === null) return null;
  if (id === "blosc" || id === "zstd" || id === "zlib" || id === "gzip") return id;
  throw unsupported(`codec ${JSON.stringify(id)} (read: blosc, zstd, zlib, gzip, none)`);
}

function fillOf(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

function checkChunk(shape: number[], chunks: number[], bytes: number): void {
  if (chunks.length !== shape.length) throw invalid(`chunks of ${chunks.length} dimensions in an array of ${shape.length}`);
  const chunkBytes = chunks.reduce((p, n) => p * n, bytes);
  if (chunkBytes > MAX_ZARR_CHUNK_BYTES) {
    throw new ImageDecodeError(
      `OME-Zarr chunks of ${chunks.join("x")} are ${chunkBytes} bytes, more than the ${MAX_ZARR_CHUNK_BYTES} a chunk may hold`,
      "too-large",
    );
  }
}

/** An array's `.zarray` (Zarr v2). */
export function zarrArrayV2(meta: unknown): ZarrArray {
  if (!isObject(meta) || meta.zarr_format !== 2) throw invalid(".zarray is not Zarr v2 array metadata");
  if (meta.order !== undefined && meta.order !== "C") throw unsupported(`chunk order ${JSON.stringify(meta.order)}`);
  if (Array.isArray(meta.filters) && meta.filters.length > 0) throw unsupported("array filters");
  const shape = positiveIntegers(meta.shape, "shape");
  const chunks = positiveIntegers(meta.chunks, "chunks");
  const type = dataTypeV2(meta.dtype);
  checkChunk(shape, chunks, type.bytes);
  const separator = meta.dimension_separator === "/" ? "/" : ".";
  return {
    shape,
    chunks,
    dataType: type,
    codec: codecOf(isObject(meta.compressor) ? meta.compressor.id : meta.compressor),
    fill: fillOf(meta.fill_value),
    chunkKey: (indices) => indices.join(separator),
  };
}

const V3_TYPES: Readonly<Record<string, [kind: string, bytes: number]>> = {
  uint8: ["u", 1],
  uint16: ["u", 2],
  uint32: ["u", 4],
  int16: ["i", 2],
  int32: ["i", 4],
  float32: ["f", 4],
};

/** An array's `zarr.json` (Zarr v3): a regular grid, the `bytes` codec and at most one compressor. */
export function zarrArrayV3(meta: unknown): ZarrArray {
  if (!isObject(meta) || meta.zarr_format !== 3 || meta.node_type !== "array") throw invalid("zarr.json is not Zarr v3 array metadata");
  const shape = positiveIntegers(meta.shape, "shape");
  const grid =
    isObject(meta.chunk_grid) && meta.chunk_grid.name === "regular" && isObject(meta.chunk_grid.configuration) ? meta.chunk_grid.configuration : null;
  if (!grid) throw unsupported("chunk grid other than regular");
  const chunks = positiveIntegers(grid.chunk_shape, "chunk_shape");
  const typeName = typeof meta.data_type === "string" ? V3_TYPES[meta.data_type] : undefined;
  if (!typeName) throw unsupported(`data type ${JSON.stringify(meta.data_type)}`);
  const codecs = Array.isArray(meta.codecs) ? meta.codecs.filter(isObject) : [];
  const names = codecs.map((c) => c.name);
  if (names[0] === "sharding_indexed") throw unsupported("sharding (convert the store to unsharded chunks, e.g. with ome2024-ngff-challenge's tools)");
  if (names[0] !== "bytes" || names.length > 2) throw unsupported(`codec chain ${JSON.stringify(names)} (read: bytes, then blosc, zstd or gzip)`);
  const endian = isObject(codecs[0]!.configuration) ? codecs[0]!.configuration.endian : "little";
  const type = dataType(typeName[0], typeName[1], endian !== "big");
  checkChunk(shape, chunks, type.bytes);
  const encoding = isObject(meta.chunk_key_encoding) ? meta.chunk_key_encoding : {};
  const configured = isObject(encoding.configuration) ? encoding.configuration.separator : undefined;
  const v2Keys = encoding.name === "v2";
  const separator = configured === "." || configured === "/" ? configured : v2Keys ? "." : "/";
  return {
    shape,
    chunks,
    dataType: type,
    codec: codecOf(names[1]),
    fill: fillOf(meta.fill_value),
    chunkKey: (indices) => (v2Keys ? indices.join(separator) : `c${separator}${indices.join(separator)}`),
  };
}

/** Where each axis is in an array: x and y required; c, z and t where present. */
export interface ZarrAxes {
  x: number;
  y: number;
  c: number | null;
  z: number | null;
  t: number | null;
}

export function zarrAxes(multiscale: ZarrMultiscale, array: ZarrArray): ZarrAxes {
  const index = (name: string) => {
    const found = multiscale.axes.findIndex((a) => a.name.toLowerCase() === name);
    return found < 0 ? null : found;
  };
  const [x, y] = [index("x"), index("y")];
  if (x === null || y === null) throw unsupported("image without x and y axes");
  if (multiscale.axes.length !== array.shape.length) throw invalid(`${multiscale.axes.length} axes for an array of ${array.shape.length} dimensions`);
  const axes = { x, y, c: index("c"), z: index("z"), t: index("t") };
  const known = new Set(Object.values(axes).filter((i) => i !== null));
  if (known.size !== array.shape.length) throw unsupported(`axes ${multiscale.axes.map((a) => a.name).join(", ")} (read: t, c, z, y, x)`);
  checkRegionImageSize(array.shape[x]!, array.shape[y]!, axes.c === null ? 1 : array.shape[axes.c]!);
  return axes;
}

/** µm per pixel of the full resolution: its x and y scale (and the multiscale's) in their axes' units; null without a length unit. */
export function zarrPixelSize(multiscale: ZarrMultiscale, axes: ZarrAxes): PixelSize | null {
  const along = (axis: number) => {
    const unit = multiscale.axes[axis]!.unit;
    const scale = (multiscale.datasets[0]!.scale?.[axis] ?? 1) * (multiscale.scale?.[axis] ?? 1);
    return unit === undefined ? null : micrometres(scale, unit);
  };
  const [x, y] = [along(axes.x), along(axes.y)];
  return x && y ? { x, y, source: "ome-zarr" } : null;
}
