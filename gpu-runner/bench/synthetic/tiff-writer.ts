// A minimal TIFF/BigTIFF writer for test fixtures: strips or tiles, chunky or planar, several
// compressions (JPEG through jpeg-js's encoder, with or without shared JPEGTables), predictors 2
// and 3, multi-page, reduced-resolution levels as SubIFDs, and an ImageDescription. It shares no
// code with the decoder, so the tests check the decoder against an independent encoding (and
// geotiff reads the same bytes as a third opinion).
import { zlibSync } from "fflate";
import jpeg from "jpeg-js";

export type Compression = "none" | "lzw" | "deflate" | "deflate-32946" | "packbits" | "jpeg";
export type SampleKind = "uint8" | "uint16" | "uint32" | "int16" | "float32" | "float64";

export interface TiffPage {
  width: number;
  height: number;
  samplesPerPixel: number;
  /** Interleaved samples, row-major: value of sample s at (x, y) is values[(y * width + x) * spp + s]. */
  values: ArrayLike<number>;
  kind: SampleKind;
  compression?: Compression;
  planar?: boolean;
  tile?: { width: number; height: number };
  rowsPerStrip?: number;
  /** 2: horizontal differencing (integers); 3: floating point (floats). */
  predictor?: 1 | 2 | 3;
  description?: string;
  /** JPEG only: keep the quantisation and Huffman tables once, in JPEGTables, and abbreviated streams in the blocks. */
  jpegTables?: boolean;
  /** Reduced-resolution levels, written as the page's SubIFDs. */
  levels?: TiffPage[];
}

export interface TiffOptions {
  bigTiff?: boolean;
  bigEndian?: boolean;
  /** Bytes left unwritten after the header, before the first data (a sparse file puts them on no disk). */
  gap?: number;
}

/** A file as the pieces to write at their offsets, for files too large to hold in memory. */
export interface TiffParts {
  size: number;
  parts: { at: number; bytes: Uint8Array }[];
}

const KIND = {
  uint8: { bytes: 1, format: 1 },
  uint16: { bytes: 2, format: 1 },
  uint32: { bytes: 4, format: 1 },
  int16: { bytes: 2, format: 2 },
  float32: { bytes: 4, format: 3 },
  float64: { bytes: 8, format: 3 },
} as const;

const COMPRESSION_CODE: Record<Compression, number> = { none: 1, lzw: 5, deflate: 8, "deflate-32946": 32946, packbits: 32773, jpeg: 7 };

export function encodeTiff(pages: TiffPage[], options: TiffOptions = {}): Uint8Array {
  const { size, parts } = encodeTiffParts(pages, options);
  const out = new Uint8Array(size);
  for (const part of parts) out.set(part.bytes, part.at);
  return out;
}

export function encodeTiffParts(pages: TiffPage[], options: TiffOptions = {}): TiffParts {
  const le = !options.bigEndian;
  const big = options.bigTiff ?? false;
  const parts: { at: number; bytes: Uint8Array }[] = [];
  let size = (big ? 16 : 8) + (options.gap ?? 0);
  const append = (bytes: Uint8Array) => {
    const at = size;
    parts.push({ at, bytes });
    size += bytes.length + (bytes.length % 2);
    return at;
  };
  const header = new DataView(new ArrayBuffer(big ? 16 : 8));
  header.setUint16(0, le ? 0x4949 : 0x4d4d);
  header.setUint16(2, big ? 43 : 42, le);
  if (big) header.setUint16(4, 8, le);
  parts.push({ at: 0, bytes: new Uint8Array(header.buffer) });
  let previousNextField = big ? 8 : 4; // where the pointer to the next IFD goes
  const patches: { at: number; value: number }[] = [];

  for (const page of pages) {
    const ifd = writePage(page, big, le, append);
    patches.push({ at: previousNextField, value: ifd.at });
    previousNextField = ifd.at + ifd.nextFieldOffset;
  }
  for (const p of patches) {
    const bytes = new Uint8Array(big ? 8 : 4);
    const view = new DataView(bytes.buffer);
    if (big) view.setBigUint64(0, BigInt(p.value), le);
    else view.setUint32(0, p.value, le);
    parts.push({ at: p.at, bytes });
  }
  return { size, parts };
}

/** Writes a page's blocks, its levels and its directory; returns where the directory is. */
function writePage(page: TiffPage, big: boolean, le: boolean, append: (bytes: Uint8Array) => number): { at: number; nextFieldOffset: number } {
  const levels = (page.levels ?? []).map((level) => writePage(level, big, le, append).at);
  const tables: { bytes?: Uint8Array } = {};
  const { bytes: bps, format } = KIND[page.kind];
  const spp = page.samplesPerPixel;
  const planar = page.planar ?? false;
  const blockW = page.tile?.width ?? page.width;
  const blockH = page.tile?.height ?? page.rowsPerStrip ?? page.height;
  const across = Math.ceil(page.width / blockW);
  const down = Math.ceil(page.height / blockH);
  const offsets: number[] = [];
  const counts: number[] = [];
  for (let plane = 0; plane < (planar ? spp : 1); plane++) {
    for (let by = 0; by < down; by++) {
      for (let bx = 0; bx < across; bx++) {
        const rows = page.tile ? blockH : Math.min(blockH, page.height - by * blockH);
        const sppIn = planar ? 1 : spp;
        const raw = new Uint8Array(blockW * rows * sppIn * bps);
        const view = new DataView(raw.buffer);
        for (let y = 0; y < rows; y++) {
          for (let x = 0; x < blockW; x++) {
            for (let s = 0; s < sppIn; s++) {
              const gx = bx * blockW + x;
              const gy = by * blockH + y;
              const inside = gx < page.width && gy < page.height;
              const value = inside ? page.values[(gy * page.width + gx) * spp + (planar ? plane : s)]! : 0;
              writeSample(view, ((y * blockW + x) * sppIn + s) * bps, page.kind, value, le);
            }
          }
        }
        if (page.predictor === 2) applyHorizontalDifferencing(raw, blockW, rows, sppIn, bps, le);
        if (page.predictor === 3) applyFloatingPointPredictor(raw, blockW, rows, sppIn, bps, le);
        const encoded =
          page.compression === "jpeg" ? jpegBlock(raw, blockW, rows, sppIn, page.jpegTables ? tables : undefined) : compress(page.compression ?? "none", raw);
        offsets.push(append(encoded));
        counts.push(encoded.length);
      }
    }
  }
  const jpegEntries: [number, number, number[]][] =
    page.compression === "jpeg"
      ? [
          [530, 3, [1, 1]], // YCbCrSubsampling: jpeg-js samples every component at full resolution
          ...(page.jpegTables ? [[347, 7, Array.from(tables.bytes!)] as [number, number, number[]]] : []),
        ]
      : [];
  const entries: [number, number, number[] | string][] = [
    [256, 4, [page.width]],
    [257, 4, [page.height]],
    [258, 3, new Array(spp).fill(bps * 8)],
    [259, 3, [COMPRESSION_CODE[page.compression ?? "none"]]],
    [262, 3, [page.compression === "jpeg" && spp === 3 ? 6 : spp >= 3 ? 2 : 1]],
    ...(page.description !== undefined ? [[270, 2, page.description] as [number, number, string]] : []),
    [277, 3, [spp]],
    [284, 3, [planar ? 2 : 1]],
    ...(page.predictor === 2 || page.predictor === 3 ? [[317, 3, [page.predictor]] as [number, number, number[]]] : []),
    ...(levels.length > 0 ? [[330, 4, levels] as [number, number, number[]]] : []),
    [339, 3, new Array(spp).fill(format)],
    ...jpegEntries,
  ];
  const offsetType = big ? 16 : 4;
  if (page.tile) {
    entries.push([322, 4, [blockW]], [323, 4, [blockH]], [324, offsetType, offsets], [325, offsetType, counts]);
  } else {
    entries.push([273, offsetType, offsets], [278, 4, [blockH]], [279, offsetType, counts]);
  }
  entries.sort((a, b) => a[0] - b[0]);
  // The directory goes where the next append puts it: its out-of-line values follow its table.
  const at = append(new Uint8Array(0));
  const ifd = encodeIfd(entries, big, le, at);
  append(ifd.bytes);
  return { at, nextFieldOffset: ifd.nextFieldOffset };
}

function writeSample(view: DataView, at: number, kind: SampleKind, value: number, le: boolean): void {
  switch (kind) {
    case "uint8":
      view.setUint8(at, value);
      break;
    case "uint16":
      view.setUint16(at, value, le);
      break;
    case "uint32":
      view.setUint32(at, value, le);
      break;
    case "int16":
      view.setInt16(at, value, le);
      break;
    case "float32":
      view.setFloat32(at, value, le);
      break;
    case "float64":
      view.setFloat64(at, value, le);
      break;
  }
}

function applyHorizontalDifferencing(raw: Uint8Array, w: number, rows: number, spp: number, bps: number, le: boolean): void {
  const view = new DataView(raw.buffer);
  for (let y = 0; y < rows; y++) {
    for (let i = w * spp - 1; i >= spp; i--) {
      const at = (y * w * spp + i) * bps;
      const prev = at - spp * bps;
      if (bps === 1) raw[at] = (raw[at]! - raw[prev]!) & 0xff;
      else if (bps === 2) view.setUint16(at, (view.getUint16(at, le) - view.getUint16(prev, le)) & 0xffff, le);
      else view.setUint32(at, (view.getUint32(at, le) - view.getUint32(prev, le)) >>> 0, le);
    }
  }
}

/** Adobe TIFF Technical Note 3: each row's sample bytes split into planes, most significant first, then byte-wise differencing. */
function applyFloatingPointPredictor(raw: Uint8Array, w: number, rows: number, spp: number, bps: number, le: boolean): void {
  const count = w * spp;
  const rowBytes = count * bps;
  for (let y = 0; y < rows; y++) {
    const row = raw.subarray(y * rowBytes, (y + 1) * rowBytes);
    const planes = new Uint8Array(rowBytes);
    for (let i = 0; i < count; i++) for (let b = 0; b < bps; b++) planes[b * count + i] = row[i * bps + (le ? bps - 1 - b : b)]!;
    for (let i = rowBytes - 1; i >= spp; i--) planes[i] = (planes[i]! - planes[i - spp]!) & 0xff;
    row.set(planes);
  }
}

/**
 * One block as a JPEG stream (jpeg-js: baseline, YCbCr, no subsampling). With `tables`, the DQT and
 * DHT segments go to the shared JPEGTables stream and the block keeps the rest (TIFF Technical Note 2).
 */
function jpegBlock(raw: Uint8Array, w: number, rows: number, spp: number, tables: { bytes?: Uint8Array } | undefined): Uint8Array {
  if (spp !== 3) throw new Error("the test writer encodes JPEG blocks of RGB pixels only");
  const rgba = new Uint8Array(w * rows * 4);
  for (let i = 0; i < w * rows; i++) rgba.set([raw[3 * i]!, raw[3 * i + 1]!, raw[3 * i + 2]!, 255], 4 * i);
  const stream = new Uint8Array(jpeg.encode({ width: w, height: rows, data: rgba }, 90).data);
  if (!tables) return stream;
  const tableSegments: Uint8Array[] = [];
  const kept: Uint8Array[] = [stream.subarray(0, 2)];
  let at = 2;
  while (stream[at + 1] !== 0xda) {
    const end = at + 2 + ((stream[at + 2]! << 8) | stream[at + 3]!);
    const marker = stream[at + 1]!;
    if (marker === 0xdb || marker === 0xc4) tableSegments.push(stream.subarray(at, end));
    else if (marker !== 0xe0) kept.push(stream.subarray(at, end)); // JFIF APP0 dropped, as libtiff writes blocks
    at = end;
  }
  kept.push(stream.subarray(at));
  tables.bytes = concat([new Uint8Array([0xff, 0xd8]), ...tableSegments, new Uint8Array([0xff, 0xd9])]);
  return concat(kept);
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

function compress(kind: Compression, raw: Uint8Array): Uint8Array {
  if (kind === "none") return raw;
  if (kind === "deflate" || kind === "deflate-32946") return zlibSync(raw);
  if (kind === "packbits") return packBits(raw);
  return lzw(raw);
}

function packBits(raw: Uint8Array): Uint8Array {
  const out: number[] = [];
  let i = 0;
  while (i < raw.length) {
    let run = 1;
    while (i + run < raw.length && raw[i + run] === raw[i] && run < 128) run++;
    if (run >= 2) {
      out.push(257 - run, raw[i]!);
      i += run;
    } else {
      const start = i;
      while (i < raw.length && i - start < 128 && !(i + 1 < raw.length && raw[i + 1] === raw[i])) i++;
      if (i === start) i++;
      out.push(i - start - 1, ...raw.subarray(start, i));
    }
  }
  return new Uint8Array(out);
}

/** TIFF LZW encoder: MSB-first codes, 9-12 bits, early change, clear when the table fills. */
function lzw(raw: Uint8Array): Uint8Array {
  const out: number[] = [];
  let buffer = 0;
  let bits = 0;
  let width = 9;
  const emit = (code: number) => {
    buffer = (buffer << width) | code;
    bits += width;
    while (bits >= 8) {
      out.push((buffer >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
    buffer &= (1 << bits) - 1;
  };
  let table = new Map<string, number>();
  let next = 258;
  emit(256);
  let current = "";
  for (const byte of raw) {
    const extended = current + String.fromCharCode(byte);
    if (current === "" || table.has(extended) || extended.length === 1) {
      current = extended;
      continue;
    }
    emit(current.length === 1 ? current.charCodeAt(0) : table.get(current)!);
    table.set(extended, next++);
    if (next + 1 > (1 << width) - 1 + 1 && width < 12) width++;
    if (next >= 4094) {
      emit(256);
      table = new Map();
      next = 258;
      width = 9;
    }
    current = String.fromCharCode(byte);
  }
  if (current !== "") emit(current.length === 1 ? current.charCodeAt(0) : table.get(current)!);
  emit(257);
  if (bits > 0) out.push((buffer << (8 - bits)) & 0xff);
  return new Uint8Array(out);
}

function encodeIfd(entries: [number, number, number[] | string][], big: boolean, le: boolean, at: number): { bytes: Uint8Array; nextFieldOffset: number } {
  const entrySize = big ? 20 : 12;
  const inline = big ? 8 : 4;
  const countSize = big ? 8 : 2;
  const tableSize = countSize + entries.length * entrySize + (big ? 8 : 4);
  const extra: Uint8Array[] = [];
  let extraSize = 0;
  const head = new DataView(new ArrayBuffer(tableSize));
  if (big) head.setBigUint64(0, BigInt(entries.length), le);
  else head.setUint16(0, entries.length, le);
  entries.forEach(([tag, type, value], i) => {
    const e = countSize + i * entrySize;
    const payload = typeof value === "string" ? new TextEncoder().encode(`${value}\0`) : encodeNumbers(value, type, le);
    const count = typeof value === "string" ? payload.length : value.length;
    head.setUint16(e, tag, le);
    head.setUint16(e + 2, type, le);
    if (big) head.setBigUint64(e + 4, BigInt(count), le);
    else head.setUint32(e + 4, count, le);
    const field = e + (big ? 12 : 8);
    if (payload.length <= inline) {
      new Uint8Array(head.buffer).set(payload, field);
    } else {
      const where = at + tableSize + extraSize;
      if (big) head.setBigUint64(field, BigInt(where), le);
      else head.setUint32(field, where, le);
      const padded = new Uint8Array(payload.length + (payload.length % 2));
      padded.set(payload);
      extra.push(padded);
      extraSize += padded.length;
    }
  });
  const bytes = new Uint8Array(tableSize + extraSize);
  bytes.set(new Uint8Array(head.buffer));
  let o = tableSize;
  for (const x of extra) {
    bytes.set(x, o);
    o += x.length;
  }
  return { bytes, nextFieldOffset: countSize + entries.length * entrySize };
}

function encodeNumbers(values: number[], type: number, le: boolean): Uint8Array {
  const size = type === 7 ? 1 : type === 3 ? 2 : type === 4 ? 4 : 8;
  const view = new DataView(new ArrayBuffer(values.length * size));
  values.forEach((v, i) => {
    if (size === 1) view.setUint8(i, v);
    else if (size === 2) view.setUint16(i * 2, v, le);
    else if (size === 4) view.setUint32(i * 4, v, le);
    else view.setBigUint64(i * 8, BigInt(v), le);
  });
  return new Uint8Array(view.buffer);
}
