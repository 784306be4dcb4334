// The label image as a tiled, Deflate-compressed 32-bit unsigned grayscale TIFF (TIFF 6.0 with
// Adobe's Deflate, compression 8; BigTIFF where classic TIFF's 32-bit offsets could not reach):
// the one format for label images of any cell count (masks.png stops at 65,535). Written band by
// band (a band is one row of tiles), so a writer holds one band of labels, never the image. Pure:
// the service's masks.tif export (worker/exports/label-tiff.ts) and the runner may both use it.
//
// Layout, in file order:
//   header (8 bytes, or 16 for BigTIFF), pointing at the IFD right after it
//   the one IFD: ImageWidth, ImageLength, BitsPerSample 32, Compression 8, Photometric 1
//     (BlackIsZero), ImageDescription (optional), SamplesPerPixel 1, PlanarConfiguration 1,
//     TileWidth, TileLength, TileOffsets, TileByteCounts, SampleFormat 1 (unsigned), next IFD 0
//   the out-of-line tag values: the description, then TileOffsets, then TileByteCounts
//   the tiles, zlib streams back to back, left to right then top to bottom (TIFF's tile order)
// Everything a reader needs comes before the first pixel, as in files libtiff writes; but the
// header and IFD hold every tile's compressed size, which is known only after compressing it, and
// a stream cannot go back to fill them in. So a streaming writer runs twice over the labels:
// first `encodeBand` every band and drop the bytes (the writer keeps each tile's byte count, 4
// bytes a tile), then write `header()` and `encodeBand` every band again, writing the bytes. zlib
// is deterministic, so the second pass reproduces the first byte for byte; `encodeBand` checks
// that it did, and throws rather than let a file's directory disagree with its data. A writer
// that can keep the compressed bands (a file in memory) compresses once: encode, keep, header,
// then the kept bands. BigTIFF is chosen from the exact total once every band is measured.
//
// Edge tiles are padded with zeros (TIFF tiles are always whole). Samples are in the platform's
// byte order (copied from a Uint32Array as they are) and the header says which ("II" or "MM").
// Deflate is node:zlib's (native in Node and in workerd with nodejs_compat; fflate's JavaScript
// deflate measured about ten times slower on label tiles), zlib-wrapped as compression 8 asks.
//
// Readers: tifffile (and so napari), libtiff, Bio-Formats (Fiji's File > Import > Bio-Formats,
// QuPath). ImageJ 1.x's own TIFF reader opens no tiled TIFF and no BigTIFF at all ("ImageJ
// cannot open tiled TIFFs. Try using the Bio-Formats plugin.").

import { deflateSync } from "node:zlib";

/** Default tile side: libtiff's and most viewers' tile size. */
const LABEL_TIFF_TILE = 256;

// Exported for its test only (test/engine/label-tiff.test.ts).
/** A band's labels stay within this many bytes: wide images get shorter tiles (at least 16 rows). */
export const LABEL_TIFF_BAND_BYTES = 16 * 1024 * 1024;

// Exported for its test only (test/engine/label-tiff.test.ts).
export interface LabelTiffOptions {
  /** Tile width in pixels, a multiple of 16 (TIFF 6.0). Default: 256, or less for a narrower image. */
  tileWidth?: number;
  /** Tile height, a multiple of 16. Default: 256, less for a shorter image or where a band would pass LABEL_TIFF_BAND_BYTES. */
  tileHeight?: number;
  /** ImageDescription; non-ASCII characters become "?". Omitted: no description. */
  description?: string;
  /** Force BigTIFF (true) or classic TIFF (false); omitted: BigTIFF only when the file passes 4 GiB. */
  bigTiff?: boolean;
  /** zlib level, 1 (fastest) to 9; default 3. */
  level?: number;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
const CLASSIC_LIMIT = 2 ** 32;

const ASCII = 2,
  SHORT = 3,
  LONG = 4,
  LONG8 = 16;
type FieldType = typeof ASCII | typeof SHORT | typeof LONG | typeof LONG8;
const TYPE_BYTES: Record<FieldType, number> = { [ASCII]: 1, [SHORT]: 2, [LONG]: 4, [LONG8]: 8 };

const roundUp16 = (n: number) => Math.ceil(n / 16) * 16;

function checkTileSide(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 16 || value % 16 !== 0 || value > 65_536) {
    throw new RangeError(`label TIFF: ${name} ${value} is not a positive multiple of 16 (at most 65536)`);
  }
  return value;
}

interface Entry {
  tag: number;
  type: FieldType;
  count: number;
  /** Writes the values at `at` (inline in the entry, or out of line). */
  write(view: DataView, at: number): void;
}

export class LabelTiffWriter {
  readonly width: number;
  readonly height: number;
  readonly tileWidth: number;
  readonly tileHeight: number;
  /** Tiles in one band (one row of tiles). */
  readonly tilesAcross: number;
  /** Bands (rows of tiles), top to bottom. */
  readonly bands: number;
  private readonly description: Uint8Array | null;
  private readonly forceBigTiff: boolean | undefined;
  private readonly level: number;
  /** Compressed size of every tile, in TIFF order, once its band has been encoded. */
  private readonly byteCounts: Uint32Array;
  private readonly measured: Uint8Array;
  private bandsMeasured = 0;
  private readonly tile: Uint32Array;

  constructor(width: number, height: number, options: LabelTiffOptions = {}) {
    if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width > 2 ** 32 - 1 || height > 2 ** 32 - 1) {
      throw new RangeError(`label TIFF: invalid image size ${width}x${height}`);
    }
    this.width = width;
    this.height = height;
    this.tileWidth = checkTileSide("tile width", options.tileWidth ?? Math.min(LABEL_TIFF_TILE, roundUp16(width)));
    this.tilesAcross = Math.ceil(width / this.tileWidth);
    const bandLimited = Math.floor(LABEL_TIFF_BAND_BYTES / (4 * this.tilesAcross * this.tileWidth) / 16) * 16;
    this.tileHeight = checkTileSide("tile height", options.tileHeight ?? Math.max(16, Math.min(LABEL_TIFF_TILE, roundUp16(height), bandLimited)));
    this.bands = Math.ceil(height / this.tileHeight);
    const level = options.level ?? 3;
    if (!Number.isInteger(level) || level < 1 || level > 9) throw new RangeError(`label TIFF: zlib level ${level} is not 1..9`);
    this.level = level;
    this.forceBigTiff = options.bigTiff;
    this.description = options.description === undefined ? null : asciiz(options.description);
    this.byteCounts = new Uint32Array(this.tilesAcross * this.bands);
    this.measured = new Uint8Array(this.bands);
    this.tile = new Uint32Array(this.tileWidth * this.tileHeight);
  }

  /** Image rows in band `band`: tileHeight, fewer in the last band. */
  bandRows(band: number): number {
    this.checkBand(band);
    return Math.min(this.tileHeight, this.height - band * this.tileHeight);
  }

  /**
   * The tiles of band `band`, compressed and back to back, from `rows`: the labels of image rows
   * band * tileHeight onwards, bandRows(band) rows of `width` values (extra values are ignored).
   * The first call for a band records its tiles' sizes; a later call must produce the same sizes.
   */
  encodeBand(rows: Uint32Array, band: number): Uint8Array {
    const bandRows = this.bandRows(band);
    const { width, tileWidth, tileHeight, tile } = this;
    if (rows.length < bandRows * width) throw new RangeError(`label TIFF: band ${band} needs ${bandRows * width} labels, got ${rows.length}`);
    const pieces: Uint8Array[] = [];
    let total = 0;
    const first = this.measured[band] === 0;
    for (let t = 0; t < this.tilesAcross; t++) {
      const x0 = t * tileWidth;
      const n = Math.min(tileWidth, width - x0);
      for (let r = 0; r < tileHeight; r++) {
        const at = r * tileWidth;
        if (r < bandRows) {
          tile.set(rows.subarray(r * width + x0, r * width + x0 + n), at);
          if (n < tileWidth) tile.fill(0, at + n, at + tileWidth);
        } else {
          tile.fill(0, at, at + tileWidth);
        }
      }
      const compressed = deflateSync(new Uint8Array(tile.buffer, tile.byteOffset, tile.byteLength), { level: this.level });
      const index = band * this.tilesAcross + t;
      if (first) this.byteCounts[index] = compressed.length;
      else if (this.byteCounts[index] !== compressed.length) {
        throw new Error(
          `label TIFF: tile ${index} compressed to ${compressed.length} bytes, ${this.byteCounts[index]} before: the labels changed between passes`,
        );
      }
      pieces.push(compressed);
      total += compressed.length;
    }
    if (first) {
      this.measured[band] = 1;
      this.bandsMeasured++;
    }
    const out = new Uint8Array(total);
    let at = 0;
    for (const piece of pieces) {
      out.set(piece, at);
      at += piece.length;
    }
    return out;
  }

  /** Whether every band has been encoded once, so `header()` can be written. */
  get complete(): boolean {
    return this.bandsMeasured === this.bands;
  }

  /** BigTIFF or classic, known once every band is measured. */
  get bigTiff(): boolean {
    this.requireComplete();
    if (this.forceBigTiff !== undefined) return this.forceBigTiff;
    return this.headerBytes(false) + this.dataBytes() >= CLASSIC_LIMIT;
  }

  /** The whole file's size in bytes. */
  get fileBytes(): number {
    return this.headerBytes(this.bigTiff) + this.dataBytes();
  }

  /** Header, IFD and tag values: the file's first bytes, the tiles follow right after. */
  header(): Uint8Array {
    const big = this.bigTiff;
    const length = this.headerBytes(big);
    if (!big && length + this.dataBytes() >= CLASSIC_LIMIT) throw new RangeError("label TIFF: the file passes 4 GiB; classic TIFF cannot address it");
    const out = new Uint8Array(length);
    const view = new DataView(out.buffer);
    const le = LITTLE_ENDIAN;
    out[0] = out[1] = le ? 0x49 : 0x4d;
    view.setUint16(2, big ? 43 : 42, le);
    const ifd = big ? 16 : 8;
    if (big) {
      view.setUint16(4, 8, le);
      view.setUint16(6, 0, le);
      view.setBigUint64(8, BigInt(ifd), le);
    } else {
      view.setUint32(4, ifd, le);
    }
    const entries = this.entries(big, length);
    const entrySize = big ? 20 : 12;
    const inlineBytes = big ? 8 : 4;
    let values = ifd + (big ? 8 : 2) + entries.length * entrySize + (big ? 8 : 4);
    if (big) view.setBigUint64(ifd, BigInt(entries.length), le);
    else view.setUint16(ifd, entries.length, le);
    entries.forEach((entry, i) => {
      const at = ifd + (big ? 8 : 2) + i * entrySize;
      view.setUint16(at, entry.tag, le);
      view.setUint16(at + 2, entry.type, le);
      if (big) view.setBigUint64(at + 4, BigInt(entry.count), le);
      else view.setUint32(at + 4, entry.count, le);
      const field = at + (big ? 12 : 8);
      const bytes = entry.count * TYPE_BYTES[entry.type];
      if (bytes <= inlineBytes) {
        entry.write(view, field);
      } else {
        if (big) view.setBigUint64(field, BigInt(values), le);
        else view.setUint32(field, values, le);
        entry.write(view, values);
        values += bytes + (bytes % 2);
      }
    });
    // The next-IFD offset after the entries stays 0: one image.
    if (values !== length) throw new Error(`label TIFF: header laid out ${values} bytes, planned ${length}`);
    return out;
  }

  private entries(big: boolean, dataStart: number): Entry[] {
    const le = LITTLE_ENDIAN;
    const short = (tag: number, value: number): Entry => ({ tag, type: SHORT, count: 1, write: (v, at) => v.setUint16(at, value, le) });
    const long = (tag: number, value: number): Entry => ({ tag, type: LONG, count: 1, write: (v, at) => v.setUint32(at, value, le) });
    const counts = this.byteCounts;
    const entries: Entry[] = [
      long(256, this.width), // ImageWidth
      long(257, this.height), // ImageLength
      short(258, 32), // BitsPerSample
      short(259, 8), // Compression: Adobe Deflate (zlib)
      short(262, 1), // PhotometricInterpretation: BlackIsZero
    ];
    const description = this.description;
    if (description) entries.push({ tag: 270, type: ASCII, count: description.length, write: (v, at) => new Uint8Array(v.buffer).set(description, at) });
    entries.push(
      short(277, 1), // SamplesPerPixel
      short(284, 1), // PlanarConfiguration: chunky
      long(322, this.tileWidth), // TileWidth
      long(323, this.tileHeight), // TileLength
      {
        tag: 324, // TileOffsets
        type: big ? LONG8 : LONG,
        count: counts.length,
        write: (v, at) => {
          let offset = dataStart;
          for (let i = 0; i < counts.length; i++) {
            if (big) v.setBigUint64(at + 8 * i, BigInt(offset), le);
            else v.setUint32(at + 4 * i, offset, le);
            offset += counts[i]!;
          }
        },
      },
      {
        tag: 325, // TileByteCounts
        type: LONG,
        count: counts.length,
        write: (v, at) => {
          for (let i = 0; i < counts.length; i++) v.setUint32(at + 4 * i, counts[i]!, le);
        },
      },
      short(339, 1), // SampleFormat: unsigned integer
    );
    return entries;
  }

  private headerBytes(big: boolean): number {
    const tiles = this.byteCounts.length;
    const entries = this.description ? 13 : 12; // as many as entries() lists
    const outOfLine = (bytes: number) => (bytes > (big ? 8 : 4) ? bytes + (bytes % 2) : 0);
    const fixed = big ? 16 + 8 + 20 * entries + 8 : 8 + 2 + 12 * entries + 4;
    return fixed + outOfLine(this.description?.length ?? 0) + outOfLine(tiles * (big ? 8 : 4)) + outOfLine(tiles * 4);
  }

  private dataBytes(): number {
    let total = 0;
    for (const count of this.byteCounts) total += count;
    return total;
  }

  private checkBand(band: number): void {
    if (!Number.isInteger(band) || band < 0 || band >= this.bands) throw new RangeError(`label TIFF: band ${band} does not exist (0..${this.bands - 1})`);
  }

  private requireComplete(): void {
    if (!this.complete)
      throw new Error(`label TIFF: ${this.bands - this.bandsMeasured} of ${this.bands} bands not encoded yet; the header needs every tile's size`);
  }
}

/** Text as NUL-terminated ASCII, other characters replaced by "?". */
function asciiz(text: string): Uint8Array {
  const out = new Uint8Array(text.length + 1);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    out[i] = c >= 0x20 && c < 0x7f ? c : c === 0x0a || c === 0x09 ? c : 0x3f;
  }
  return out;
}
