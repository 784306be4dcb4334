// Crafted hostile image files, the cases of issue 15 and their relatives: each one is small, and
// each one asks a careless reader for gigabytes, hours or a crash. Built by hand (a raw TIFF layout
// writer, PNG chunks, JPEG markers) so every offset and count is the attacker's choice. Both the
// engine's decoders (test/engine/decode/hostile-files.test.ts) and the worker's upload probe
// (test/worker/hostile-uploads.test.ts) are run against them.
import { zlibSync } from "fflate";
import { crc32 } from "../../../schema/roi-artifact-crc32.ts";
import { deflateBomb } from "./deflate-bomb.ts";

export interface HostileFile {
  name: string;
  bytes: Uint8Array;
  /** What the error message must say. */
  error: RegExp;
  /** Whether the upload probe, which reads headers only, already refuses it (else the engine does). */
  refusedAtUpload: boolean;
}

// ---- TIFF -------------------------------------------------------------------------------------

type Entry = [tag: number, type: number, count: number | bigint, value: number | bigint];

interface RawDirectory {
  at: number;
  entries: Entry[];
  next: number | bigint;
  /** Written instead of entries.length (a forged count). */
  count?: number | bigint;
}

const TIFF_TYPE_SIZE: Record<number, number> = { 1: 1, 2: 1, 3: 2, 4: 4, 16: 8 };

/** Lays out a little-endian TIFF (or BigTIFF) byte for byte: header, directories, blobs. */
export function rawTiff(
  size: number,
  first: number | bigint,
  directories: RawDirectory[],
  blobs: { at: number; bytes: Uint8Array }[] = [],
  big = false,
): Uint8Array {
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setUint16(0, 0x4949);
  view.setUint16(2, big ? 43 : 42, true);
  if (big) {
    view.setUint16(4, 8, true);
    view.setBigUint64(8, BigInt(first), true);
  } else {
    view.setUint32(4, Number(first), true);
  }
  for (const blob of blobs) out.set(blob.bytes, blob.at);
  for (const dir of directories) {
    let at = dir.at;
    const count = dir.count ?? dir.entries.length;
    if (big) view.setBigUint64(at, BigInt(count), true);
    else view.setUint16(at, Number(count), true);
    at += big ? 8 : 2;
    for (const [tag, type, n, value] of dir.entries) {
      view.setUint16(at, tag, true);
      view.setUint16(at + 2, type, true);
      if (big) view.setBigUint64(at + 4, BigInt(n), true);
      else view.setUint32(at + 4, Number(n), true);
      const field = at + (big ? 12 : 8);
      const inline = Number(n) * (TIFF_TYPE_SIZE[type] ?? 1) <= (big ? 8 : 4);
      if (inline && type === 3) view.setUint16(field, Number(value), true);
      else if (big) view.setBigUint64(field, BigInt(value), true);
      else view.setUint32(field, Number(value), true);
      at += big ? 20 : 12;
    }
    if (big) view.setBigUint64(at, BigInt(dir.next), true);
    else view.setUint32(at, Number(dir.next), true);
  }
  return out;
}

/** The tags of a one-strip, 8-bit grayscale page whose pixels are `count` bytes at `offset`. */
function grayPage(width: number, height: number, offset: number, count: number, compression = 1): Entry[] {
  return [
    [256, 4, 1, width],
    [257, 4, 1, height],
    [258, 3, 1, 8],
    [259, 3, 1, compression],
    [262, 3, 1, 1],
    [273, 4, 1, offset],
    [277, 3, 1, 1],
    [278, 4, 1, height],
    [279, 4, 1, count],
  ];
}

const MiB = 1024 * 1024;

function tagsSharingOneBlock(): Uint8Array {
  // 4000 private tags, each claiming the same 1 MiB block as its value: 4 GB of values in 1 MB.
  const block = 64 * 1024;
  const pixel = block + MiB;
  const shared: Entry[] = Array.from({ length: 4000 }, (_, i) => [40000 + i, 1, MiB, block]);
  return rawTiff(pixel + 2, 8, [{ at: 8, entries: [...grayPage(1, 1, pixel, 1), ...shared], next: 0 }]);
}

function knownTagsSharingOneBlock(): Uint8Array {
  // Offsets and byte counts of 131,072 strips each, both read from one block of zeros.
  const block = 4096;
  const entries = grayPage(1, 1, 0, 0).map(([tag, type, n, value]): Entry => ([273, 279].includes(tag) ? [tag, 4, MiB / 8, block] : [tag, type, n, value]));
  return rawTiff(block + MiB, 8, [{ at: 8, entries, next: 0 }]);
}

function hugeTileOnTinyImage(): Uint8Array {
  const bomb = deflateBomb(2 ** 30);
  const entries: Entry[] = [
    [256, 4, 1, 1],
    [257, 4, 1, 1],
    [258, 3, 1, 8],
    [259, 3, 1, 8],
    [262, 3, 1, 1],
    [277, 3, 1, 1],
    [322, 4, 1, 32768],
    [323, 4, 1, 32768],
    [324, 4, 1, 256],
    [325, 4, 1, bomb.length],
  ];
  return rawTiff(256 + bomb.length, 8, [{ at: 8, entries, next: 0 }], [{ at: 256, bytes: bomb }]);
}

function stripInflatingToAGigabyte(): Uint8Array {
  const bomb = deflateBomb(2 ** 30);
  return rawTiff(256 + bomb.length, 8, [{ at: 8, entries: grayPage(1, 1, 256, bomb.length, 8), next: 0 }], [{ at: 256, bytes: bomb }]);
}

/** 100,000 empty directories after a valid first page, each in the next of 17 blocks of 64 KiB. */
function directoriesRotatedOverBlocks(): Uint8Array {
  const blocks = 17;
  const blockSize = 64 * 1024;
  const count = 100_000;
  const at = (i: number) => (i % blocks) * blockSize + 512 + Math.floor(i / blocks) * 6;
  const directories: RawDirectory[] = [{ at: 8, entries: grayPage(1, 1, 300, 1), next: at(0) }];
  for (let i = 0; i < count; i++) directories.push({ at: at(i), entries: [], next: i + 1 < count ? at(i + 1) : 0 });
  return rawTiff(blocks * blockSize, 8, directories);
}

function directoryLoop(): Uint8Array {
  return rawTiff(512, 8, [
    { at: 8, entries: grayPage(1, 1, 500, 1), next: 200 },
    { at: 200, entries: grayPage(1, 1, 500, 1), next: 8 },
  ]);
}

function bigTiffEntryCount(count: bigint, size = 4096): Uint8Array {
  return rawTiff(size, 16, [{ at: 16, entries: [], next: 0, count }], [], true);
}

function cases(): HostileFile[] {
  const gray = (width: number, height: number, offset: number, count: number, compression = 1, size = 512) =>
    rawTiff(size, 8, [{ at: 8, entries: grayPage(width, height, offset, count, compression), next: 0 }]);
  const lzw = (data: number[]) =>
    rawTiff(256 + data.length, 8, [{ at: 8, entries: grayPage(4, 4, 256, data.length, 5), next: 0 }], [{ at: 256, bytes: new Uint8Array(data) }]);
  return [
    { name: "TIFF: 4000 tags whose values all share one 1 MiB block", bytes: tagsSharingOneBlock(), error: /tag values claim/, refusedAtUpload: true },
    {
      name: "TIFF: strip offsets and counts of 131,072 strips read from one block",
      bytes: knownTagsSharingOneBlock(),
      error: /block 0 \(0 bytes at 0\) has|too few to decode to 1/,
      refusedAtUpload: true,
    },
    {
      name: "TIFF: a 1x1 image with one 32768² deflate tile (a 1 GiB bomb)",
      bytes: hugeTileOnTinyImage(),
      error: /far larger than the 1x1 image/,
      refusedAtUpload: true,
    },
    { name: "TIFF: a 1x1 image whose strip inflates to 1 GiB", bytes: stripInflatingToAGigabyte(), error: /inflates past the 1 bytes/, refusedAtUpload: false },
    {
      name: "TIFF: 100,000 directories rotated over 17 blocks",
      bytes: directoriesRotatedOverBlocks(),
      error: /more than 65536 directories/,
      refusedAtUpload: true,
    },
    { name: "TIFF: a directory chain that loops", bytes: directoryLoop(), error: /loops/, refusedAtUpload: true },
    { name: "BigTIFF: an entry count of 2^40", bytes: bigTiffEntryCount(2n ** 40n), error: /1099511627776 entries/, refusedAtUpload: true },
    { name: "BigTIFF: an entry count that spans the whole file", bytes: bigTiffEntryCount(52427n, MiB), error: /52427 entries/, refusedAtUpload: true },
    {
      name: "BigTIFF: a first directory at offset 2^63",
      bytes: rawTiff(64, 2n ** 63n, [], [], true),
      error: /offset|outside|past the end|past any file size/,
      refusedAtUpload: true,
    },
    { name: "TIFF: a strip at offset 0xFFFFFFF0", bytes: gray(4, 4, 0xfffffff0, 16), error: /past the end/, refusedAtUpload: true },
    { name: "TIFF: a first directory past the end", bytes: rawTiff(64, 0x7fffffff, []), error: /outside the file|past the end/, refusedAtUpload: true },
    { name: "TIFF: zero width", bytes: gray(0, 4, 300, 0), error: /invalid image size 0x4/, refusedAtUpload: true },
    // Past MAX_REGION_IMAGE_SAMPLES: more than any segmentation reads, refused before any work.
    { name: "TIFF: 200000x200000 pixels in 16 bytes", bytes: gray(200_000, 200_000, 300, 16), error: /image too large/, refusedAtUpload: true },
    // Within it, but 16 bytes cannot hold the one strip: refused for that (by the engine's whole decode, for its size).
    {
      name: "TIFF: 65535x65535 pixels in 16 bytes",
      bytes: gray(65535, 65535, 300, 16),
      error: /image too large|too few to decode|truncated/,
      refusedAtUpload: true,
    },
    { name: "TIFF: 16000x16000 LZW pixels in 100 bytes", bytes: gray(16000, 16000, 300, 100, 5), error: /too few to decode/, refusedAtUpload: true },
    {
      name: "TIFF: 1x1 tiles on a 16384² image (2^28 blocks)",
      bytes: rawTiff(512, 8, [
        {
          at: 8,
          entries: [
            [256, 4, 1, 16384],
            [257, 4, 1, 16384],
            [258, 3, 1, 8],
            [322, 4, 1, 1],
            [323, 4, 1, 1],
            [324, 4, 1, 300],
            [325, 4, 1, 1],
          ],
          next: 0,
        },
      ]),
      error: /strips or tiles, more than/,
      refusedAtUpload: true,
    },
    { name: "TIFF: LZW whose first code is not a literal", bytes: lzw([0x80, 0x1f, 0xff, 0xff, 0xff]), error: /LZW data is corrupt/, refusedAtUpload: false },
    {
      name: "TIFF: LZW with a code out of sequence",
      bytes: lzw([0x80, 0x00, 0x3f, 0xff, 0xff, 0xff]),
      error: /LZW data is corrupt|ends early/,
      refusedAtUpload: false,
    },
    {
      name: "TIFF: PackBits that ends early",
      bytes: rawTiff(300, 8, [{ at: 8, entries: grayPage(4, 4, 256, 4, 32773), next: 0 }], [{ at: 256, bytes: new Uint8Array([0x7f, 1, 2, 3]) }]),
      error: /PackBits data ends early/,
      refusedAtUpload: false,
    },
    {
      name: "TIFF: Deflate that is not zlib",
      bytes: rawTiff(300, 8, [{ at: 8, entries: grayPage(4, 4, 256, 16, 8), next: 0 }], [{ at: 256, bytes: new Uint8Array(16).fill(0x55) }]),
      error: /Deflate data is corrupt/,
      refusedAtUpload: false,
    },
    { name: "TIFF: compression 34712 (JPEG 2000)", bytes: gray(4, 4, 300, 16, 34712), error: /compression 34712 is not supported/, refusedAtUpload: true },
    { name: "TIFF: a JPEG-compressed strip that is no JPEG", bytes: gray(4, 4, 300, 16, 7), error: /TIFF JPEG block/, refusedAtUpload: false },
    { name: "TIFF: header only", bytes: rawTiff(8, 8, []), error: /outside the file|past the end|truncated/, refusedAtUpload: true },
    // Issue 24: strips that name the same stored bytes, each valid alone, cost strips x file size to decode.
    {
      name: "TIFF: 64 LZW strips that all name one run of 100,000 clear codes",
      bytes: stripsSharingLzwData(64, 64, 100_000),
      error: /compressed strips or tiles claim 7204800 bytes, more than the 113599-byte file holds \(blocks that share their bytes\)/,
      refusedAtUpload: true,
    },
    {
      // More byte counts than the upload probe reads of a tag at first (4096): it reads them all.
      name: "TIFF: 5,000 LZW strips that all name one run of 1,000 clear codes",
      bytes: stripsSharingLzwData(64, 5_000, 1_000),
      error: /compressed strips or tiles claim \d+ bytes, more than the \d+-byte file holds/,
      refusedAtUpload: true,
    },
    {
      name: "TIFF: 4 channel pages whose strips all name one run of 100,000 clear codes",
      bytes: channelPagesSharingLzwData(4, 100_000),
      error: /compressed strips or tiles claim \d+ bytes, more than the \d+-byte file holds/,
      // Each page alone fits in the file, and the probe reads the first page's tags only.
      refusedAtUpload: false,
    },
    ...pngCases(),
    ...jpegCases(),
  ];
}

// ---- PNG --------------------------------------------------------------------------------------

export function chunk(type: string, data: Uint8Array, crc?: number): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  out.set(data, 8);
  view.setUint32(8 + data.length, crc ?? crc32(out.subarray(4, 8 + data.length)));
  return out;
}

export function ihdr(width: number, height: number, depth: number, colourType: number, interlace = 0): Uint8Array {
  const data = new Uint8Array(13);
  const view = new DataView(data.buffer);
  view.setUint32(0, width);
  view.setUint32(4, height);
  data.set([depth, colourType, 0, 0, interlace], 8);
  return chunk("IHDR", data);
}

export function rawPng(...chunks: Uint8Array[]): Uint8Array {
  const parts = [new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), ...chunks];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

export const iend = () => chunk("IEND", new Uint8Array(0));

/** An 8-bit grayscale PNG stored Adam7-interlaced (seven passes, filter 0), pixel (x, y) = value(x, y). */
export function interlacedGrayPng(width: number, height: number, value: (x: number, y: number) => number): Uint8Array {
  const rows: number[] = [];
  for (const [x0, y0, dx, dy] of [
    [0, 0, 8, 8],
    [4, 0, 8, 8],
    [0, 4, 4, 8],
    [2, 0, 4, 4],
    [0, 2, 2, 4],
    [1, 0, 2, 2],
    [0, 1, 1, 2],
  ] as const) {
    if (x0 >= width) continue;
    for (let y = y0; y < height; y += dy) {
      rows.push(0);
      for (let x = x0; x < width; x += dx) rows.push(value(x, y));
    }
  }
  return rawPng(ihdr(width, height, 8, 0, 1), chunk("IDAT", zlibSync(new Uint8Array(rows))), iend());
}

function pngCases(): HostileFile[] {
  const rows = (width: number, height: number, value: number) =>
    zlibSync(new Uint8Array(height * (width + 1)).map((_, i) => (i % (width + 1) === 0 ? 0 : value)));
  const badCrc = rawPng(ihdr(4, 4, 8, 0), chunk("IDAT", rows(4, 4, 7), 0x12345678), iend());
  return [
    {
      name: "PNG: a 1x1 image whose IDAT inflates to 1 GiB",
      bytes: rawPng(ihdr(1, 1, 8, 0), chunk("IDAT", deflateBomb(2 ** 30)), iend()),
      error: /inflates past the 2 bytes/,
      refusedAtUpload: false,
    },
    { name: "PNG: a bad CRC", bytes: badCrc, error: /CRC mismatch/, refusedAtUpload: false },
    {
      name: "PNG: image data that is not zlib",
      bytes: rawPng(ihdr(4, 4, 8, 0), chunk("IDAT", new Uint8Array(20).fill(0x55)), iend()),
      error: /image data is corrupt/,
      refusedAtUpload: false,
    },
    {
      name: "PNG: palette indices past a 2-colour palette",
      bytes: rawPng(ihdr(4, 4, 8, 3), chunk("PLTE", new Uint8Array(6)), chunk("IDAT", rows(4, 4, 200)), iend()),
      error: /palette index 200/,
      refusedAtUpload: false,
    },
    {
      name: "PNG: 16000x16000 pixels in 100 bytes",
      bytes: rawPng(ihdr(16000, 16000, 8, 0), chunk("IDAT", new Uint8Array(100)), iend()),
      error: /cannot hold|truncated/,
      refusedAtUpload: true,
    },
    {
      name: "PNG: 100000x100000 pixels in a few bytes",
      bytes: rawPng(ihdr(100000, 100000, 8, 0), chunk("IDAT", rows(1, 1, 0)), iend()),
      error: /image too large|truncated/,
      refusedAtUpload: true,
    },
    {
      name: "PNG: 200000x200000 pixels",
      bytes: rawPng(ihdr(200_000, 200_000, 8, 0), chunk("IDAT", rows(1, 1, 0)), iend()),
      error: /image too large/,
      refusedAtUpload: true,
    },
    { name: "PNG: zero width", bytes: rawPng(ihdr(0, 4, 8, 0), chunk("IDAT", rows(1, 1, 0)), iend()), error: /invalid image size 0x4/, refusedAtUpload: true },
    {
      name: "PNG: RGB at 4 bits",
      bytes: rawPng(ihdr(4, 4, 4, 2), chunk("IDAT", rows(4, 4, 0)), iend()),
      error: /invalid colour type 2 \/ bit depth 4/,
      refusedAtUpload: true,
    },
    {
      name: "PNG: image data short of the rows",
      bytes: rawPng(ihdr(64, 64, 8, 0), chunk("IDAT", rows(64, 8, 1)), iend()),
      error: /inflates to \d+ of \d+ bytes|truncated/,
      refusedAtUpload: false,
    },
    {
      name: "PNG: a chunk longer than the file",
      bytes: rawPng(ihdr(4, 4, 8, 0), chunk("IDAT", rows(4, 4, 7))).slice(0, 60),
      error: /truncated/,
      refusedAtUpload: true,
    },
  ];
}

// ---- JPEG -------------------------------------------------------------------------------------

function jpegWithFrame(width: number, height: number, components: number, dataBytes: number): Uint8Array {
  const frame = [0xff, 0xc0, 0, 8 + 3 * components, 8, height >> 8, height & 255, width >> 8, width & 255, components];
  for (let c = 0; c < components; c++) frame.push(c + 1, 0x11, 0);
  return new Uint8Array([0xff, 0xd8, ...frame, ...new Array(dataBytes).fill(0), 0xff, 0xd9]);
}

function jpegCases(): HostileFile[] {
  return [
    { name: "JPEG: a 65535x65535 frame", bytes: jpegWithFrame(65535, 65535, 3, 64), error: /image too large/, refusedAtUpload: true },
    { name: "JPEG: an 8000x8000 frame in 64 bytes", bytes: jpegWithFrame(8000, 8000, 3, 64), error: /cannot hold a 8000x8000 frame/, refusedAtUpload: true },
    { name: "JPEG: a zero-height frame", bytes: jpegWithFrame(16, 0, 1, 64), error: /invalid frame 16x0/, refusedAtUpload: true },
    {
      name: "JPEG: a marker segment of length 0",
      bytes: new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 0, 0xff, 0xd9]),
      error: /shorter than its length field/,
      refusedAtUpload: true,
    },
    {
      name: "JPEG: scan data before any frame",
      bytes: new Uint8Array([0xff, 0xd8, 0xff, 0xda, 0, 8, 1, 1, 0, 0, 63, 0, 0xff, 0xd9]),
      error: /frame header|scan data before/,
      refusedAtUpload: true,
    },
    {
      name: "JPEG: 100,000 empty comment segments before any frame",
      bytes: new Uint8Array([0xff, 0xd8, ...Array.from({ length: 100_000 }, () => [0xff, 0xfe, 0, 2]).flat(), 0xff, 0xd9]),
      error: /no frame header in its first 4096 marker segments/,
      refusedAtUpload: true,
    },
    { name: "JPEG: a frame with no tables or scan", bytes: jpegWithFrame(16, 16, 1, 64), error: /JPEG corrupt or truncated/, refusedAtUpload: false },
  ];
}

/** Every crafted case, built on first use (the bombs take a few megabytes each). */
export function hostileFiles(): HostileFile[] {
  return cases();
}

/**
 * A whole slide in a small file: side² 8-bit pixels in tile² uncompressed tiles that all share one
 * stored tile, whose pixel (x, y) is x + y (mod 256). 100000² is 10^10 samples in 1.3 MB.
 */
export function sharedTileSlide(side: number, tile = 256): Uint8Array {
  const tiles = Math.ceil(side / tile) ** 2;
  const offsetsAt = 512;
  const countsAt = offsetsAt + 4 * tiles;
  const tileAt = countsAt + 4 * tiles;
  const entries: Entry[] = [
    [256, 4, 1, side],
    [257, 4, 1, side],
    [258, 3, 1, 8],
    [259, 3, 1, 1],
    [262, 3, 1, 1],
    [277, 3, 1, 1],
    [322, 4, 1, tile],
    [323, 4, 1, tile],
    [324, 4, tiles, offsetsAt],
    [325, 4, tiles, countsAt],
  ];
  return rawTiff(
    tileAt + tile * tile,
    8,
    [{ at: 8, entries, next: 0 }],
    [
      { at: offsetsAt, bytes: new Uint8Array(new Uint32Array(tiles).fill(tileAt).buffer) },
      { at: countsAt, bytes: new Uint8Array(new Uint32Array(tiles).fill(tile * tile).buffer) },
      { at: tileAt, bytes: Uint8Array.from({ length: tile * tile }, (_, i) => (i % tile) + Math.floor(i / tile)) },
    ],
  );
}

// ---- Blocks that share their bytes (issue 24) -------------------------------------------------

/**
 * TIFF LZW (TIFF 6.0, section 13) data that takes long to read and says little: `clears` clear
 * codes (256, 9 bits each) and then `pixels` literal codes and an end code, so it decodes to
 * `pixels` bytes of `value` only after the reader has gone through all of it. `clears` is rounded
 * up to a multiple of 8, so the literals start on a byte boundary.
 */
export function lzwAfterClearCodes(clears: number, pixels: number, value = 1): Uint8Array {
  if (pixels > 250) throw new Error("the literals must stay 9-bit codes");
  const groups = Math.ceil(clears / 8);
  const tailBits = 9 * (2 + pixels); // a clear, the literals, the end code
  const out = new Uint8Array(9 * groups + Math.ceil(tailBits / 8));
  // Eight 9-bit clear codes are exactly 9 bytes: 100000000 repeated.
  if (groups > 0) out.set([0x80, 0x40, 0x20, 0x10, 0x08, 0x04, 0x02, 0x01, 0x00]);
  for (let filled = 9; filled < 9 * groups; filled *= 2) out.copyWithin(filled, 0, Math.min(filled, 9 * groups - filled));
  let bitPos = 8 * 9 * groups;
  const code = (c: number) => {
    for (let i = 8; i >= 0; i--, bitPos++) if ((c >> i) & 1) out[bitPos >> 3]! |= 0x80 >> (bitPos & 7);
  };
  code(256);
  for (let i = 0; i < pixels; i++) code(value);
  code(257);
  return out;
}

/**
 * A `width` x `strips` 8-bit LZW TIFF of one-row strips that all name the same stored bytes: LZW
 * data of `clears` clear codes before the row's pixels. Each strip alone is valid, so a reader that
 * decodes strips as they are listed reads the shared data once per strip: strips x file size.
 */
export function stripsSharingLzwData(width: number, strips: number, clears: number): Uint8Array {
  const data = lzwAfterClearCodes(clears, width);
  const offsetsAt = 512;
  const countsAt = offsetsAt + 4 * strips;
  const dataAt = countsAt + 4 * strips;
  const entries: Entry[] = [
    [256, 4, 1, width],
    [257, 4, 1, strips],
    [258, 3, 1, 8],
    [259, 3, 1, 5],
    [262, 3, 1, 1],
    // One value fits in the entry itself; more are stored apart.
    [273, 4, strips, strips === 1 ? dataAt : offsetsAt],
    [277, 3, 1, 1],
    [278, 4, 1, 1],
    [279, 4, strips, strips === 1 ? data.length : countsAt],
  ];
  return rawTiff(
    dataAt + data.length,
    8,
    [{ at: 8, entries, next: 0 }],
    [
      { at: offsetsAt, bytes: new Uint8Array(new Uint32Array(strips).fill(dataAt).buffer) },
      { at: countsAt, bytes: new Uint8Array(new Uint32Array(strips).fill(data.length).buffer) },
      { at: dataAt, bytes: data },
    ],
  );
}

/**
 * An ImageJ hyperstack of `channels` channels, one 64x1 LZW page each, whose strips all name the
 * same LZW data of `clears` clear codes: each page alone fits in the file, the pages of one plane
 * together do not (the reader must count them across pages).
 */
export function channelPagesSharingLzwData(channels: number, clears: number): Uint8Array {
  const data = lzwAfterClearCodes(clears, 64);
  const description = new TextEncoder().encode(`ImageJ=1.54f\nimages=${channels}\nchannels=${channels}\n\0`);
  const descriptionAt = 64;
  const dataAt = 512 + 256 * channels;
  const page = (i: number): RawDirectory => ({
    at: 512 + 256 * i,
    entries: [...grayPage(64, 1, dataAt, data.length, 5), ...(i === 0 ? ([[270, 2, description.length, descriptionAt]] as Entry[]) : [])].sort(
      (a, b) => a[0] - b[0],
    ),
    next: i + 1 < channels ? 512 + 256 * (i + 1) : 0,
  });
  return rawTiff(
    dataAt + data.length,
    512,
    Array.from({ length: channels }, (_, i) => page(i)),
    [
      { at: descriptionAt, bytes: description },
      { at: dataAt, bytes: data },
    ],
  );
}
