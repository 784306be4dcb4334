// Reads the structure of a TIFF or BigTIFF file: header and the chain of image file directories
// (IFDs), after the TIFF 6.0 specification and the BigTIFF extension (offsets of 8 bytes, tag
// types LONG8/IFD8). Every read is bounds-checked so a truncated or forged file fails cleanly, and
// bounded (schema/image-formats limits): the chain is walked reading only each directory's entry
// count and next offset, and a directory's tags are read when its page is used, only the tags the
// decoder knows, so many directories or tags pointing at one big block cost no memory.
import {
  checkTiffValueBytes,
  ImageDecodeError,
  MAX_TIFF_DESCRIPTION_BYTES,
  MAX_TIFF_DIRECTORIES,
  MAX_TIFF_ENTRIES,
  MAX_TIFF_TAG_VALUES,
  TAGS_READ,
  Tag,
  TYPE_SIZE,
  type TiffTags,
} from "../../../schema/image-formats/index.ts";

export { Tag };

/** A tag's value: numbers for numeric types, a string for ASCII. */
export type TagValue = number[] | string;

export interface TiffDirectory extends TiffTags {
  tags: Map<number, TagValue>;
}

export interface TiffFile {
  bytes: Uint8Array;
  view: DataView;
  littleEndian: boolean;
  bigTiff: boolean;
  pageCount: number;
  /** The directory of page `index`, its tags read on first use. */
  directory(index: number): TiffDirectory;
}

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
  if (!isTiff(bytes)) throw new ImageDecodeError("not a TIFF file", "unsupported");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const littleEndian = bytes[0] === 0x49;
  const size = bytes.length;
  const u16 = (at: number) => (at + 2 <= size ? view.getUint16(at, littleEndian) : truncated("a header field"));
  const bigTiff = u16(2) === 43;
  const u32 = (at: number) => (at + 4 <= size ? view.getUint32(at, littleEndian) : truncated("a header field"));
  const u64 = (at: number) => {
    if (at + 8 > size) truncated("a header field");
    const value = view.getBigUint64(at, littleEndian);
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) truncated("an offset");
    return Number(value);
  };
  const offsetAt = bigTiff ? u64 : u32;
  const entrySize = bigTiff ? 20 : 12;
  const countSize = bigTiff ? 8 : 2;

  let next: number;
  if (bigTiff) {
    if (u16(4) !== 8 || u16(6) !== 0) throw new ImageDecodeError("BigTIFF header has an unsupported offset size", "unsupported");
    next = u64(8);
  } else {
    next = u32(4);
  }

  // Walk the chain: per directory only its entry count and next offset.
  const starts: { first: number; count: number }[] = [];
  const seen = new Set<number>();
  while (next !== 0) {
    if (seen.has(next)) throw new ImageDecodeError("TIFF corrupt: directory chain loops");
    if (starts.length >= MAX_TIFF_DIRECTORIES) throw new ImageDecodeError(`TIFF has more than ${MAX_TIFF_DIRECTORIES} directories`, "too-large");
    seen.add(next);
    const count = bigTiff ? u64(next) : u16(next);
    if (count > MAX_TIFF_ENTRIES) throw new ImageDecodeError(`TIFF directory has ${count} entries, more than the ${MAX_TIFF_ENTRIES} allowed`);
    const first = next + countSize;
    if (first + count * entrySize + (bigTiff ? 8 : 4) > size) truncated("an image directory");
    starts.push({ first, count });
    next = offsetAt(first + count * entrySize);
  }
  if (starts.length === 0) throw new ImageDecodeError("TIFF has no image directory");

  const readDirectory = ({ first, count }: { first: number; count: number }): TiffDirectory => {
    const tags = new Map<number, TagValue>();
    const counts = new Map<number, number>();
    let valueBytes = 0;
    for (let i = 0; i < count; i++) {
      const entry = first + i * entrySize;
      const tag = u16(entry);
      const type = u16(entry + 2);
      const n = bigTiff ? u64(entry + 4) : u32(entry + 4);
      const typeSize = TYPE_SIZE[type] ?? 0;
      if (typeSize === 0) continue; // unknown types are skipped, as the spec asks of readers
      const inline = n * typeSize <= (bigTiff ? 8 : 4);
      if (!inline) valueBytes += n * typeSize;
      if (!TAGS_READ.has(tag) || tags.has(tag)) continue;
      const valueField = entry + (bigTiff ? 12 : 8);
      const at = inline ? valueField : offsetAt(valueField);
      if (at + n * typeSize > size) truncated(`tag ${tag}`);
      if (type === 2) {
        // Only the description is text; its first bytes hold everything a reader looks at.
        tags.set(tag, readText(bytes, at, Math.min(n, MAX_TIFF_DESCRIPTION_BYTES)));
      } else {
        if (n > MAX_TIFF_TAG_VALUES) throw new ImageDecodeError(`TIFF tag ${tag} has ${n} values, more than the ${MAX_TIFF_TAG_VALUES} allowed`, "too-large");
        tags.set(tag, readNumbers(view, at, type, n, littleEndian));
      }
      counts.set(tag, n);
    }
    checkTiffValueBytes(valueBytes, size);
    return {
      tags,
      numbers: (tag) => {
        const value = tags.get(tag);
        return Array.isArray(value) ? value : undefined;
      },
      count: (tag) => counts.get(tag) ?? 0,
    };
  };

  const cache = new Map<number, TiffDirectory>();
  return {
    bytes,
    view,
    littleEndian,
    bigTiff,
    pageCount: starts.length,
    directory(index) {
      const start = starts[index];
      if (!start) throw new ImageDecodeError(`TIFF page ${index} is missing`);
      let dir = cache.get(index);
      if (!dir) cache.set(index, (dir = readDirectory(start)));
      return dir;
    },
  };
}

function readText(bytes: Uint8Array, at: number, n: number): string {
  let end = at + n;
  while (end > at && bytes[end - 1] === 0) end--;
  return new TextDecoder("latin1").decode(bytes.subarray(at, end));
}

function readNumbers(view: DataView, at: number, type: number, n: number, le: boolean): number[] {
  const values = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    switch (type) {
      case 1:
      case 7:
        values[i] = view.getUint8(at + i);
        break;
      case 6:
        values[i] = view.getInt8(at + i);
        break;
      case 3:
        values[i] = view.getUint16(at + 2 * i, le);
        break;
      case 8:
        values[i] = view.getInt16(at + 2 * i, le);
        break;
      case 4:
      case 13:
        values[i] = view.getUint32(at + 4 * i, le);
        break;
      case 9:
        values[i] = view.getInt32(at + 4 * i, le);
        break;
      case 5:
        values[i] = view.getUint32(at + 8 * i, le) / view.getUint32(at + 8 * i + 4, le);
        break;
      case 10:
        values[i] = view.getInt32(at + 8 * i, le) / view.getInt32(at + 8 * i + 4, le);
        break;
      case 11:
        values[i] = view.getFloat32(at + 4 * i, le);
        break;
      case 12:
        values[i] = view.getFloat64(at + 8 * i, le);
        break;
      default:
        values[i] = Number(type === 17 ? view.getBigInt64(at + 8 * i, le) : view.getBigUint64(at + 8 * i, le));
    }
  }
  return values;
}

export function stringOf(dir: TiffDirectory, tag: number): string | undefined {
  const value = dir.tags.get(tag);
  return typeof value === "string" ? value : undefined;
}
