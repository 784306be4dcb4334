// Reads the structure of a TIFF or BigTIFF file: header and the chain of image file directories
// (IFDs), after the TIFF 6.0 specification and the BigTIFF extension (offsets of 8 bytes, tag
// types LONG8/IFD8). Every read is bounds-checked so a truncated or forged file fails cleanly.
import { ImageDecodeError } from "./decoded-image.ts";

export const Tag = {
  NewSubfileType: 254,
  ImageWidth: 256,
  ImageLength: 257,
  BitsPerSample: 258,
  Compression: 259,
  Photometric: 262,
  ImageDescription: 270,
  StripOffsets: 273,
  SamplesPerPixel: 277,
  RowsPerStrip: 278,
  StripByteCounts: 279,
  PlanarConfiguration: 284,
  Predictor: 317,
  TileWidth: 322,
  TileLength: 323,
  TileOffsets: 324,
  TileByteCounts: 325,
  SampleFormat: 339,
} as const;

/** A tag's value: numbers for numeric types, a string for ASCII. */
export type TagValue = number[] | string;

export interface TiffDirectory {
  tags: Map<number, TagValue>;
}

export interface TiffFile {
  bytes: Uint8Array;
  view: DataView;
  littleEndian: boolean;
  bigTiff: boolean;
  directories: TiffDirectory[];
}

// Byte size of each TIFF field type (index = type code); 0 marks an unknown type.
const TYPE_SIZE = [0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4, 0, 0, 8, 8, 8];

/** Guards against IFD chains that loop or are absurdly long. */
const MAX_DIRECTORIES = 100_000;

export function isTiff(bytes: Uint8Array): boolean {
  if (bytes.length < 4) return false;
  const ii = bytes[0] === 0x49 && bytes[1] === 0x49 && (bytes[2] === 42 || bytes[2] === 43) && bytes[3] === 0;
  const mm = bytes[0] === 0x4d && bytes[1] === 0x4d && bytes[2] === 0 && (bytes[3] === 42 || bytes[3] === 43);
  return ii || mm;
}

function truncated(what: string): never {
  throw new ImageDecodeError(`TIFF truncated or corrupt: ${what} lies outside the file`);
}

export function readTiffFile(bytes: Uint8Array): TiffFile {
  if (!isTiff(bytes)) throw new ImageDecodeError("not a TIFF file");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const littleEndian = bytes[0] === 0x49;
  const bigTiff = view.getUint16(2, littleEndian) === 43;
  const size = bytes.length;

  const u16 = (at: number) => (at + 2 <= size ? view.getUint16(at, littleEndian) : truncated("a header field"));
  const u32 = (at: number) => (at + 4 <= size ? view.getUint32(at, littleEndian) : truncated("a header field"));
  const u64 = (at: number) => {
    if (at + 8 > size) truncated("a header field");
    const value = view.getBigUint64(at, littleEndian);
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) truncated("an offset");
    return Number(value);
  };
  const offsetAt = bigTiff ? u64 : u32;

  let next: number;
  if (bigTiff) {
    if (u16(4) !== 8 || u16(6) !== 0) throw new ImageDecodeError("BigTIFF header has an unsupported offset size");
    next = u64(8);
  } else {
    next = u32(4);
  }

  const directories: TiffDirectory[] = [];
  const seen = new Set<number>();
  while (next !== 0) {
    if (seen.has(next)) throw new ImageDecodeError("TIFF corrupt: directory chain loops");
    if (directories.length >= MAX_DIRECTORIES) throw new ImageDecodeError("TIFF has too many directories");
    seen.add(next);
    const count = bigTiff ? u64(next) : u16(next);
    const entrySize = bigTiff ? 20 : 12;
    const first = next + (bigTiff ? 8 : 2);
    if (first + count * entrySize + (bigTiff ? 8 : 4) > size) truncated("an image directory");
    const tags = new Map<number, TagValue>();
    for (let i = 0; i < count; i++) {
      const entry = first + i * entrySize;
      const tag = u16(entry);
      const type = u16(entry + 2);
      const n = bigTiff ? u64(entry + 4) : u32(entry + 4);
      const typeSize = TYPE_SIZE[type] ?? 0;
      if (typeSize === 0) continue; // unknown types are skipped, as the spec asks of readers
      const inlineBytes = bigTiff ? 8 : 4;
      const valueField = entry + (bigTiff ? 12 : 8);
      const at = n * typeSize <= inlineBytes ? valueField : offsetAt(valueField);
      if (at + n * typeSize > size) truncated(`tag ${tag}`);
      tags.set(tag, readValues(view, bytes, at, type, n, littleEndian));
    }
    directories.push({ tags });
    next = offsetAt(first + count * entrySize);
  }
  if (directories.length === 0) throw new ImageDecodeError("TIFF has no image directory");
  return { bytes, view, littleEndian, bigTiff, directories };
}

function readValues(view: DataView, bytes: Uint8Array, at: number, type: number, n: number, le: boolean): TagValue {
  if (type === 2) {
    let end = at + n;
    while (end > at && bytes[end - 1] === 0) end--;
    return new TextDecoder("latin1").decode(bytes.subarray(at, end));
  }
  const values = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    switch (type) {
      case 1: case 7: values[i] = view.getUint8(at + i); break;
      case 6: values[i] = view.getInt8(at + i); break;
      case 3: values[i] = view.getUint16(at + 2 * i, le); break;
      case 8: values[i] = view.getInt16(at + 2 * i, le); break;
      case 4: case 13: values[i] = view.getUint32(at + 4 * i, le); break;
      case 9: values[i] = view.getInt32(at + 4 * i, le); break;
      case 5: values[i] = view.getUint32(at + 8 * i, le) / view.getUint32(at + 8 * i + 4, le); break;
      case 10: values[i] = view.getInt32(at + 8 * i, le) / view.getInt32(at + 8 * i + 4, le); break;
      case 11: values[i] = view.getFloat32(at + 4 * i, le); break;
      case 12: values[i] = view.getFloat64(at + 8 * i, le); break;
      default: values[i] = Number(type === 17 ? view.getBigInt64(at + 8 * i, le) : view.getBigUint64(at + 8 * i, le));
    }
  }
  return values;
}

export function numbersOf(dir: TiffDirectory, tag: number): number[] | undefined {
  const value = dir.tags.get(tag);
  return Array.isArray(value) ? value : undefined;
}

export function numberOf(dir: TiffDirectory, tag: number, fallback?: number): number {
  const value = numbersOf(dir, tag)?.[0] ?? fallback;
  if (value === undefined) throw new ImageDecodeError(`TIFF is missing required tag ${tag}`);
  return value;
}

export function stringOf(dir: TiffDirectory, tag: number): string | undefined {
  const value = dir.tags.get(tag);
  return typeof value === "string" ? value : undefined;
}
