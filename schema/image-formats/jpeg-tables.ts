// The JPEGTables tag of a JPEG-compressed TIFF page (TIFF Technical Note 2): the quantisation and
// Huffman tables its abbreviated blocks share, which the decoder puts in front of every block. A
// writer needs a few hundred bytes (libjpeg's jpeg_write_tables: at most 4 DQT and 8 DHT segments,
// about 3 KB), but nothing in the format stops a megabyte of 2,383 segments being parsed again for
// each of a million tiles. So the tag is bounded in bytes (checked from its count, at upload too)
// and in segments, read once per page, and reduced to the tables a block can use: the last
// definition of each (a later one replaces an earlier one of the same number, as in any JPEG
// stream), at most 4 quantisation and 8 Huffman tables. What is then prepended to every block is
// counted against the file (checkJpegTablesWork).
import { ImageDecodeError } from "./errors.ts";

/** Bytes a JPEGTables tag may hold: twenty times what libjpeg writes at most. */
const MAX_JPEG_TABLES_BYTES = 64 * 1024;

/** Marker segments a JPEGTables tag may hold: 12 definitions, and room for comments and APPn. */
const MAX_JPEG_TABLES_SEGMENTS = 64;

/**
 * Bytes of tables prepended to blocks, all pages together, beyond the file's own size: a small
 * image cut into many strips spends more on its tables than on its data (13 strips of 100 x 8
 * pixels, 7 KB of tables for a 4 KB file), a slide never.
 */
const JPEG_TABLES_WORK_ALLOWANCE = 16 * 1024 * 1024;

/** A page's JPEGTables of `count` bytes fits MAX_JPEG_TABLES_BYTES; checked before its values are read. */
export function checkJpegTablesSize(count: number, page: number): void {
  if (count > MAX_JPEG_TABLES_BYTES) {
    throw new ImageDecodeError(`TIFF page ${page}: its JPEGTables hold ${count} bytes, more than the ${MAX_JPEG_TABLES_BYTES} allowed`);
  }
}

const SOI = 0xd8;
const EOI = 0xd9;
const DQT = 0xdb;
const DHT = 0xc4;
const DRI = 0xdd;
const COM = 0xfe;
const isApp = (marker: number) => marker >= 0xe0 && marker <= 0xef;

const corrupt = (why: string) => new ImageDecodeError(`TIFF JPEGTables corrupt: ${why}`);

/**
 * The tables of a JPEGTables tag as one short stream to put in front of a block: SOI, one DQT
 * segment with the last definition of each quantisation table, one DHT segment with each Huffman
 * table's, and the restart interval if one was set; no EOI. Throws on anything a table stream may
 * not hold, and past MAX_JPEG_TABLES_SEGMENTS segments.
 */
export function compactJpegTables(values: ArrayLike<number>): Uint8Array {
  const bytes = Uint8Array.from(values as ArrayLike<number>);
  if (bytes.length > MAX_JPEG_TABLES_BYTES) throw corrupt(`${bytes.length} bytes, more than the ${MAX_JPEG_TABLES_BYTES} allowed`);
  if (bytes[0] !== 0xff || bytes[1] !== SOI) throw corrupt("it does not start with SOI");
  const quantisation = new Map<number, Uint8Array>();
  const huffman = new Map<number, Uint8Array>();
  let restart: Uint8Array | undefined;
  let at = 2;
  for (let segments = 0; at < bytes.length; ) {
    if (bytes[at] !== 0xff) throw corrupt(`a marker expected at byte ${at}`);
    const marker = bytes[at + 1];
    if (marker === 0xff) {
      at += 1; // fill byte
      continue;
    }
    if (marker === EOI) break;
    if (++segments > MAX_JPEG_TABLES_SEGMENTS) throw corrupt(`more than ${MAX_JPEG_TABLES_SEGMENTS} marker segments`);
    if (at + 4 > bytes.length) throw corrupt(`truncated at byte ${at}`);
    const end = at + 2 + ((bytes[at + 2]! << 8) | bytes[at + 3]!);
    if (end > bytes.length || end < at + 4) throw corrupt(`the segment at byte ${at} overruns the tables`);
    const body = bytes.subarray(at + 4, end);
    if (marker === DQT) readDefinitions(body, quantisation, (b, i) => 1 + 64 * ((b[i]! >> 4) + 1), "quantisation");
    else if (marker === DHT) readDefinitions(body, huffman, huffmanTableBytes, "Huffman");
    else if (marker === DRI) restart = bytes.subarray(at, end);
    else if (!isApp(marker!) && marker !== COM) throw corrupt(`marker 0x${marker!.toString(16)} has no place among tables`);
    at = end;
  }
  const segment = (code: number, tables: Map<number, Uint8Array>) => {
    if (tables.size === 0) return [];
    const body = [...tables.keys()].sort((a, b) => a - b).map((key) => tables.get(key)!);
    const length = 2 + body.reduce((n, t) => n + t.length, 0);
    return [Uint8Array.of(0xff, code, length >> 8, length & 0xff), ...body];
  };
  const parts = [Uint8Array.of(0xff, SOI), ...segment(DQT, quantisation), ...segment(DHT, huffman), ...(restart ? [restart] : [])];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** A DHT table's bytes from its class/number byte at `i`: 1 + 16 code counts + the values they count. */
function huffmanTableBytes(body: Uint8Array, i: number): number {
  if (i + 17 > body.length) return Number.POSITIVE_INFINITY;
  let values = 0;
  for (let k = 1; k <= 16; k++) values += body[i + k]!;
  return 17 + values;
}

/** The definitions of one DQT or DHT segment, each kept under its class/number byte (later ones replace earlier ones). */
function readDefinitions(body: Uint8Array, into: Map<number, Uint8Array>, sizeAt: (body: Uint8Array, i: number) => number, kind: string): void {
  for (let i = 0; i < body.length; ) {
    const size = sizeAt(body, i);
    if (i + size > body.length) throw corrupt(`a ${kind} table overruns its segment`);
    into.set(body[i]!, body.slice(i, i + size));
    i += size;
  }
}

/**
 * The tables prepended to every JPEG block of the pages read, `totalBytes` all together, stay
 * within the file's size and JPEG_TABLES_WORK_ALLOWANCE: parsing them is work per block that the
 * blocks' own stored bytes (checkTiffStoredBytes) do not count.
 */
export function checkJpegTablesWork(totalBytes: number, fileSize: number): void {
  if (totalBytes > fileSize + JPEG_TABLES_WORK_ALLOWANCE) {
    throw new ImageDecodeError(
      `TIFF corrupt: its JPEG tables, put in front of each of its blocks, come to ${totalBytes} bytes, more than the ${fileSize}-byte file and ${JPEG_TABLES_WORK_ALLOWANCE} bytes beyond it`,
    );
  }
}
