// Reads the structure of a TIFF or BigTIFF file: header and the chain of image file directories
// (IFDs), after the TIFF 6.0 specification and the BigTIFF extension (offsets of 8 bytes, tag
// types LONG8/IFD8). Every read is bounds-checked so a truncated or forged file fails cleanly, and
// bounded (schema/image-formats limits): the chain is walked reading only each directory's entry
// count and next offset, and a directory's tags are read when its page is used, only the tags the
// decoder knows, so many directories or tags pointing at one big block cost no memory.
//
// Hamamatsu's NDPI is read too: a classic TIFF whose offsets have high halves stored after each
// directory (schema/image-formats/ndpi.ts), told by the NDPI tag on its first directory; a page
// whose JPEG lists restart intervals is described as tiles of them (ndpi-tiles.ts).
//
// The parsing is written once, as header-parse.ts generators: readTiffFile answers them from bytes
// in memory, synchronously (decodeImage), openTiffSource from a ByteSource with ranged reads (the
// region reader), so a directory of a huge file is read without reading the file.
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
} from "../../schema/image-formats/index.ts";
import type { ByteSource } from "./byte-source.ts";
import { outside, type Parse, parseBytes, parseSource } from "./header-parse.ts";
import { readRestartTiles } from "./ndpi-tiles.ts";

export { Tag };

/** A tag's value: numbers for numeric types, a string for ASCII. */
type TagValue = number[] | string;

export interface TiffDirectory extends TiffTags {
  tags: Map<number, TagValue>;
  /** An NDPI page read by restart intervals: the JPEG header each of its tiles is decoded behind. */
  jpegHeader?: Uint8Array;
}

/** What both readers know once the header and the directory chain are read. */
export interface TiffStructure {
  littleEndian: boolean;
  bigTiff: boolean;
  /** Hamamatsu NDPI: 8-byte next-directory offsets, and the high halves of each entry's value after them. */
  ndpi: boolean;
  /** Where each page's directory starts, in chain order. */
  directories: readonly number[];
}

export interface TiffFile extends TiffStructure {
  bytes: Uint8Array;
  view: DataView;
  pageCount: number;
  /** The directory of page `index`, its tags read on first use. */
  directory(index: number): TiffDirectory;
}

interface TiffSource extends TiffStructure {
  size: number;
  pageCount: number;
  /** The directory of page `index`, its tags read on first use. */
  directory(index: number): Promise<TiffDirectory>;
  /** The directory at byte `offset` (a SubIFD: a reduced-resolution level). */
  directoryAt(offset: number): Promise<TiffDirectory>;
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

/** Numbers of a TIFF's byte order, read from a request's bytes. */
class Fields {
  readonly littleEndian: boolean;
  constructor(littleEndian: boolean) {
    this.littleEndian = littleEndian;
  }
  view(bytes: Uint8Array): DataView {
    return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  u16(bytes: Uint8Array, at: number): number {
    return this.view(bytes).getUint16(at, this.littleEndian);
  }
  u32(bytes: Uint8Array, at: number): number {
    return this.view(bytes).getUint32(at, this.littleEndian);
  }
  /** A 64-bit offset or count; past 2^53 no file holds it. */
  u64(bytes: Uint8Array, at: number): number {
    const value = this.view(bytes).getBigUint64(at, this.littleEndian);
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) truncated("an offset");
    return Number(value);
  }
}

/** Header and directory chain; per directory only its entry count and next offset are read. */
export function* readStructure(size: number): Parse<TiffStructure> {
  const head = yield { offset: 0, length: 4, what: "a header field" };
  if (!isTiff(head)) throw new ImageDecodeError("not a TIFF file", "unsupported");
  const f = new Fields(head[0] === 0x49);
  const bigTiff = f.u16(head, 2) === 43;
  let next: number;
  if (bigTiff) {
    const rest = yield { offset: 4, length: 12, what: "a header field" };
    if (f.u16(rest, 0) !== 8 || f.u16(rest, 2) !== 0) throw new ImageDecodeError("BigTIFF header has an unsupported offset size", "unsupported");
    next = f.u64(rest, 4);
  } else {
    next = f.u32(yield { offset: 4, length: 4, what: "a header field" }, 0);
  }
  let ndpi = false;
  if (!bigTiff && f.littleEndian) {
    const ndpiFirst = yield* ndpiFirstDirectory(f, next, size);
    if (ndpiFirst !== null) [ndpi, next] = [true, ndpiFirst];
  }
  const entrySize = bigTiff ? 20 : 12;
  const countSize = bigTiff ? 8 : 2;
  const nextSize = bigTiff || ndpi ? 8 : 4;

  const directories: number[] = [];
  const seen = new Set<number>();
  while (next !== 0) {
    if (seen.has(next)) throw new ImageDecodeError("TIFF corrupt: directory chain loops");
    if (directories.length >= MAX_TIFF_DIRECTORIES) throw new ImageDecodeError(`TIFF has more than ${MAX_TIFF_DIRECTORIES} directories`, "too-large");
    seen.add(next);
    const count = yield* entryCount(f, bigTiff, next);
    const end = next + countSize + count * entrySize;
    if (outside(end, nextSize + (ndpi ? 4 * count : 0), size)) truncated("an image directory");
    directories.push(next);
    const field = yield { offset: end, length: nextSize, what: "an image directory" };
    next = nextSize === 8 ? f.u64(field, 0) : f.u32(field, 0);
  }
  if (directories.length === 0) throw new ImageDecodeError("TIFF has no image directory");
  return { littleEndian: f.littleEndian, bigTiff, ndpi, directories };
}

/**
 * Where an NDPI's first directory is, or null if the file is no NDPI: the directory the classic
 * header points at, or failing that the one its 8-byte offset points at (an NDPI past 4 GiB), when
 * it holds the NDPI tag.
 */
function* ndpiFirstDirectory(f: Fields, classic: number, size: number): Parse<number | null> {
  const candidates = [classic];
  if (!outside(4, 8, size)) {
    // In a classic TIFF these bytes are anything: read without the u64's refusal of huge values.
    const field = yield { offset: 4, length: 8, what: "a header field" };
    const wide = f.u32(field, 0) + f.u32(field, 4) * 2 ** 32;
    if (wide !== classic) candidates.push(wide);
  }
  for (const at of candidates) {
    if (outside(at, 2, size)) continue;
    const count = f.u16(yield { offset: at, length: 2, what: "an image directory" }, 0);
    if (count > MAX_TIFF_ENTRIES || outside(at + 2, count * 12, size)) continue;
    const table = yield { offset: at + 2, length: count * 12, what: "an image directory" };
    for (let i = 0; i < count; i++) if (f.u16(table, i * 12) === Tag.NdpiFileFormat) return at;
  }
  return null;
}

function* entryCount(f: Fields, bigTiff: boolean, at: number): Parse<number> {
  const field = yield { offset: at, length: bigTiff ? 8 : 2, what: "a header field" };
  const count = bigTiff ? f.u64(field, 0) : f.u16(field, 0);
  if (count > MAX_TIFF_ENTRIES) throw new ImageDecodeError(`TIFF directory has ${count} entries, more than the ${MAX_TIFF_ENTRIES} allowed`);
  return count;
}

/** The tags the readers use of the directory at `at`, values and all. */
export function* readDirectory(structure: TiffStructure, at: number, size: number): Parse<TiffDirectory> {
  const { bigTiff, littleEndian, ndpi } = structure;
  const f = new Fields(littleEndian);
  const entrySize = bigTiff ? 20 : 12;
  const count = yield* entryCount(f, bigTiff, at);
  const first = at + (bigTiff ? 8 : 2);
  if (outside(first, count * entrySize + (bigTiff || ndpi ? 8 : 4) + (ndpi ? 4 * count : 0), size)) truncated("an image directory");
  const table = yield { offset: first, length: count * entrySize, what: "an image directory" };
  // NDPI: the high half of each entry's value field, after the next-directory offset.
  const highHalves = ndpi ? yield { offset: first + count * entrySize + 8, length: 4 * count, what: "an image directory" } : undefined;
  const wide = (i: number, low: number) => low + (highHalves ? f.u32(highHalves, 4 * i) * 2 ** 32 : 0);
  const tags = new Map<number, TagValue>();
  const counts = new Map<number, number>();
  let valueBytes = 0;
  for (let i = 0; i < count; i++) {
    const entry = table.subarray(i * entrySize, (i + 1) * entrySize);
    const tag = f.u16(entry, 0);
    const type = f.u16(entry, 2);
    const n = bigTiff ? f.u64(entry, 4) : f.u32(entry, 4);
    const typeSize = TYPE_SIZE[type] ?? 0;
    if (typeSize === 0) continue; // unknown types are skipped, as the spec asks of readers
    const inline = n * typeSize <= (bigTiff ? 8 : 4);
    if (!inline) valueBytes += n * typeSize;
    if (!TAGS_READ.has(tag) || tags.has(tag)) continue;
    const valueField = bigTiff ? 12 : 8;
    const valueAt = inline ? 0 : bigTiff ? f.u64(entry, valueField) : wide(i, f.u32(entry, valueField));
    if (!inline && outside(valueAt, n * typeSize, size)) truncated(`tag ${tag}`);
    // The description and the XMP packet (BYTEs of UTF-8 XML) are read as text.
    const text = type === 2 || tag === Tag.XmlPacket;
    if (!text && n > MAX_TIFF_TAG_VALUES) {
      throw new ImageDecodeError(`TIFF tag ${tag} has ${n} values, more than the ${MAX_TIFF_TAG_VALUES} allowed`, "too-large");
    }
    // Their first bytes hold everything a reader looks at.
    const wanted = text ? Math.min(n, MAX_TIFF_DESCRIPTION_BYTES) : n;
    const value = inline ? entry.subarray(valueField, valueField + n * typeSize) : yield { offset: valueAt, length: wanted * typeSize, what: `tag ${tag}` };
    const numbers = text ? undefined : readNumbers(f.view(value), type, n, littleEndian);
    // NDPI: a single LONG (a strip's offset or size) has its high half too.
    if (numbers && n === 1 && (type === 4 || type === 13)) numbers[0] = wide(i, numbers[0]!);
    tags.set(tag, numbers ?? readText(value));
    counts.set(tag, n);
  }
  checkTiffValueBytes(valueBytes, size);
  const directory: TiffDirectory = {
    tags,
    numbers: (tag) => {
      const value = tags.get(tag);
      return Array.isArray(value) ? value : undefined;
    },
    count: (tag) => counts.get(tag) ?? 0,
  };
  return ndpi ? yield* ndpiPage(directory, counts, size) : directory;
}

/**
 * An NDPI page as the readers take it: its restart intervals as tiles (their offsets and sizes in
 * the tile tags), and its JPEG's three components as YCbCr, which they are (JFIF, as OpenSlide
 * decodes them) whatever the photometric tag says.
 */
function* ndpiPage(directory: TiffDirectory, counts: Map<number, number>, size: number): Parse<TiffDirectory> {
  const { tags } = directory;
  if (directory.numbers(Tag.Compression)?.[0] === 7 && directory.numbers(Tag.SamplesPerPixel)?.[0] === 3) tags.set(Tag.Photometric, [6]);
  const tiles = yield* readRestartTiles(directory, size);
  if (!tiles) return directory;
  for (const tag of [Tag.StripOffsets, Tag.StripByteCounts, Tag.RowsPerStrip]) {
    tags.delete(tag);
    counts.delete(tag);
  }
  const tileTags: [number, number[]][] = [
    [Tag.TileWidth, [tiles.tiling.tileWidth]],
    [Tag.TileLength, [tiles.tiling.tileHeight]],
    [Tag.TileOffsets, tiles.offsets],
    [Tag.TileByteCounts, tiles.byteCounts],
  ];
  for (const [tag, values] of tileTags) {
    tags.set(tag, values);
    counts.set(tag, values.length);
  }
  return { ...directory, jpegHeader: tiles.header };
}

export function readTiffFile(bytes: Uint8Array): TiffFile {
  if (!isTiff(bytes)) throw new ImageDecodeError("not a TIFF file", "unsupported");
  const structure = parseBytes(readStructure(bytes.length), bytes);
  const cache = new Map<number, TiffDirectory>();
  return {
    ...structure,
    bytes,
    view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    pageCount: structure.directories.length,
    directory(index) {
      const at = structure.directories[index];
      if (at === undefined) throw new ImageDecodeError(`TIFF page ${index} is missing`);
      let dir = cache.get(index);
      if (!dir) cache.set(index, (dir = parseBytes(readDirectory(structure, at, bytes.length), bytes)));
      return dir;
    },
  };
}

/** The same file through ranged reads: `source` should cache small reads (byte-ranges.ts cachedSource). */
export async function openTiffSource(source: ByteSource): Promise<TiffSource> {
  const structure = await parseSource(readStructure(source.size), source);
  const cache = new Map<number, Promise<TiffDirectory>>();
  const directoryAt = (at: number): Promise<TiffDirectory> => {
    let dir = cache.get(at);
    if (!dir) cache.set(at, (dir = parseSource(readDirectory(structure, at, source.size), source)));
    return dir;
  };
  return {
    ...structure,
    size: source.size,
    pageCount: structure.directories.length,
    directory(index) {
      const at = structure.directories[index];
      if (at === undefined) return Promise.reject(new ImageDecodeError(`TIFF page ${index} is missing`));
      return directoryAt(at);
    },
    directoryAt,
  };
}

function readText(bytes: Uint8Array): string {
  let end = bytes.length;
  while (end > 0 && bytes[end - 1] === 0) end--;
  return new TextDecoder("latin1").decode(bytes.subarray(0, end));
}

function readNumbers(view: DataView, type: number, n: number, le: boolean): number[] {
  const values = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    switch (type) {
      case 1:
      case 7:
        values[i] = view.getUint8(i);
        break;
      case 6:
        values[i] = view.getInt8(i);
        break;
      case 3:
        values[i] = view.getUint16(2 * i, le);
        break;
      case 8:
        values[i] = view.getInt16(2 * i, le);
        break;
      case 4:
      case 13:
        values[i] = view.getUint32(4 * i, le);
        break;
      case 9:
        values[i] = view.getInt32(4 * i, le);
        break;
      case 5:
        values[i] = view.getUint32(8 * i, le) / view.getUint32(8 * i + 4, le);
        break;
      case 10:
        values[i] = view.getInt32(8 * i, le) / view.getInt32(8 * i + 4, le);
        break;
      case 11:
        values[i] = view.getFloat32(4 * i, le);
        break;
      case 12:
        values[i] = view.getFloat64(8 * i, le);
        break;
      default:
        values[i] = Number(type === 17 ? view.getBigInt64(8 * i, le) : view.getBigUint64(8 * i, le));
    }
  }
  return values;
}

export function stringOf(dir: TiffDirectory, tag: number): string | undefined {
  const value = dir.tags.get(tag);
  return typeof value === "string" ? value : undefined;
}

/** A page's size as its directory states it (0 where a tag is missing: such a page is no level). */
export function pageSize(dir: TiffDirectory): { width: number; height: number } {
  return { width: dir.numbers(Tag.ImageWidth)?.[0] ?? 0, height: dir.numbers(Tag.ImageLength)?.[0] ?? 0 };
}
