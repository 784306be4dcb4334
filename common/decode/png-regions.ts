// Rectangles of a PNG, read in bounded memory. A PNG's pixels are one zlib stream over all its rows,
// each row filtered against the one above, so it cannot be read at random: rows are inflated and
// unfiltered one after another (a streaming inflate fed a few kilobytes at a time), keeping only the
// current position. A region at or below that position reads on; one above it starts again from
// the first row, unless the rows are among the last kept (KeptRows, sized by keepRows). Memory is the region, the kept rows, two rows, one IDAT chunk (up to VERIFIED_CHUNK_BYTES) and
// what one small input push inflates to. Checked: IHDR, PLTE and IDAT CRCs; not checked: chunks
// past the last row read, and the zlib stream's Adler-32 (the whole-image decoder checks both).
// Interlaced PNGs (Adam7 spreads each row over seven passes) are read whole if small enough, else refused.
import { Unzlib } from "fflate";
import {
  checkRegionImageSize,
  ImageDecodeError,
  MAX_PNG_ROW_BYTES,
  maxInflatedBytes,
  pngEndsWithIend,
  pngInflatedBytes,
  pngRowBytes,
  pngWorkingChannels,
  readPngHeader,
  type PngHeader,
} from "../../schema/image-formats/index.ts";
import { crc32 } from "../crc32.ts";
import type { ByteSource } from "./byte-source.ts";
import { copyRowSamples, filterStep, unfilterRow } from "./png-rows.ts";
import { checkRegion, type ImageRegions } from "./region.ts";
import { openWholeRegions } from "./whole-regions.ts";

/** Compressed bytes pushed into the inflater at once: a Deflate bomb turns them into at most ~8 MiB. */
const PUSH_BYTES = 8 * 1024;
/** Unfiltered rows kept by default for regions that overlap the last ones read (KeptRows); keepRows raises it. */
const KEPT_ROW_BYTES = 32 * 1024 * 1024;
/** Bytes fetched from the source per read while walking the file. */
const WINDOW_BYTES = 256 * 1024;
/**
 * IDAT chunks up to this size are read whole and their CRC checked before any of their data is
 * used (writers use 8 KiB to 1 MiB); a larger chunk is checked when its end is reached, so rows
 * read from it before then are not covered by its CRC.
 */
const VERIFIED_CHUNK_BYTES = 16 * 1024 * 1024;

const IDAT = 0x49444154;
const IEND = 0x49454e44;
const PLTE = 0x504c5445;

const u32 = (bytes: Uint8Array, at: number) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(at);

export async function openPngRegions(source: ByteSource): Promise<ImageRegions> {
  if (source.size < 33) throw new ImageDecodeError("PNG truncated: no complete header");
  const head = await source.read(0, 33);
  if (u32(head, 8) !== 13 || u32(head, 12) !== 0x49484452) throw new ImageDecodeError("PNG corrupt: first chunk is not IHDR");
  if (crc32(head.subarray(12, 29)) !== u32(head, 29)) throw new ImageDecodeError("PNG corrupt: CRC mismatch in chunk at byte 8");
  const header = readPngHeader(head.subarray(16, 29));
  checkRegionImageSize(header.width, header.height, pngWorkingChannels(header));
  if (!pngEndsWithIend(await source.read(source.size - 8, 8))) throw new ImageDecodeError("PNG truncated: it does not end with an IEND chunk");
  if (header.interlaced) return openWholeRegions(source, "png", "an interlaced PNG cannot be read by rows");
  if (maxInflatedBytes(8, source.size) < pngInflatedBytes(header)) {
    throw new ImageDecodeError(`PNG truncated: ${source.size} bytes cannot hold a ${header.width}x${header.height} image`);
  }
  if (pngRowBytes(header) > MAX_PNG_ROW_BYTES) {
    throw new ImageDecodeError(`PNG rows of ${pngRowBytes(header)} bytes are more than the ${MAX_PNG_ROW_BYTES} a region read allows`, "too-large");
  }
  const reader = new WindowReader(source);
  const { palette, firstIdat } = await chunksBeforeData(reader, header);
  const rows = new PngRowStream(reader, header, firstIdat);
  const rowBytes = pngRowBytes(header);
  const kept = new KeptRows(rowBytes, Math.max(1, Math.floor(KEPT_ROW_BYTES / rowBytes)));
  const image = { width: header.width, height: header.height, channels: header.channels };
  let queue: Promise<unknown> = Promise.resolve();
  return {
    ...image,
    bitDepth: header.sampleBits,
    sampleFormat: "uint",
    format: "png",
    pages: 1,
    levels: [],
    rowBytes,
    keepRows(n) {
      kept.resize(Math.max(1, Math.min(n, header.height)));
    },
    readRegion(x, y, w, h, options) {
      const wanted = checkRegion(image, x, y, w, h, options);
      // One row stream, so regions are read one at a time, in the order asked.
      const read = queue.then(async () => {
        const data = new Float32Array(wanted.length * w * h);
        // Rows above the stream's position come from the kept rows; above those the stream starts again.
        if (y < rows.next - kept.count) {
          rows.restart();
          kept.clear();
        }
        const next = async (): Promise<Uint8Array> => kept.add(rows.next, await rows.read());
        while (rows.next < y) await next();
        for (let r = 0; r < h; r++) {
          const row = y + r < rows.next ? kept.get(y + r) : await next();
          copyRowSamples(header, palette, row, x, w, h, wanted, r, data);
        }
        return { width: w, height: h, channels: wanted.length, bitDepth: header.sampleBits, sampleFormat: "uint" as const, data };
      });
      queue = read.catch(() => {});
      return read;
    },
  };
}

/**
 * The last rows read, unfiltered, in a ring: regions side by side (the blocks of one band, the
 * survey's windows of one row) and a band's top margin, which the band above already read, are
 * served from here instead of inflating the file again from its start.
 */
class KeptRows {
  private rows: Uint8Array[] = [];
  private capacity: number;
  private readonly rowBytes: number;
  /** Index of the row after the last one kept. */
  private end = 0;
  count = 0;
  constructor(rowBytes: number, capacity: number) {
    this.rowBytes = rowBytes;
    this.capacity = capacity;
  }
  resize(capacity: number): void {
    if (capacity === this.capacity) return;
    const keep = Math.min(this.count, capacity);
    const rows = Array.from({ length: keep }, (_, i) => this.get(this.end - keep + i));
    this.capacity = capacity;
    this.rows = [];
    this.count = 0;
    const end = this.end;
    this.end = end - keep;
    rows.forEach((row, i) => this.add(end - keep + i, row));
  }
  clear(): void {
    this.count = 0;
    this.end = 0;
  }
  /** Keeps a copy of row `index` (the row after the last kept, or the first after a clear); returns the copy. */
  add(index: number, row: Uint8Array): Uint8Array {
    if (index !== this.end) this.count = 0;
    const slot = index % this.capacity;
    const copy = (this.rows[slot] ??= new Uint8Array(this.rowBytes));
    copy.set(row);
    this.end = index + 1;
    this.count = Math.min(this.count + 1, this.capacity);
    return copy;
  }
  get(index: number): Uint8Array {
    if (index < this.end - this.count || index >= this.end) throw new RangeError(`PNG row ${index} is not kept`);
    return this.rows[index % this.capacity]!;
  }
}

/** Walks the chunks up to the first IDAT: the palette (PLTE) a palette image needs, and where the data starts. */
async function chunksBeforeData(reader: WindowReader, header: PngHeader): Promise<{ palette: Uint8Array | undefined; firstIdat: number }> {
  let palette: Uint8Array | undefined;
  for (let at = 33; ; ) {
    const { length, type } = await chunkHeader(reader, at);
    if (type === IDAT) {
      if (header.colourType === 3 && !palette) throw new ImageDecodeError("PNG corrupt: a palette image without a palette (PLTE) before its data");
      return { palette, firstIdat: at };
    }
    if (type === IEND) throw new ImageDecodeError("PNG truncated: no image data (IDAT) before IEND");
    if (type === PLTE) {
      if (length === 0 || length % 3 !== 0 || length > 3 * 256) throw new ImageDecodeError(`PNG corrupt: a palette of ${length} bytes`);
      const chunk = await reader.read(at + 4, length + 8);
      if (crc32(chunk.subarray(0, 4 + length)) !== u32(chunk, 4 + length)) throw new ImageDecodeError(`PNG corrupt: CRC mismatch in chunk at byte ${at}`);
      palette = chunk.slice(4, 4 + length);
    }
    at += 12 + length;
  }
}

async function chunkHeader(reader: WindowReader, at: number): Promise<{ length: number; type: number }> {
  if (at + 12 > reader.size) throw new ImageDecodeError("PNG truncated: it ends before its IEND chunk");
  const bytes = await reader.read(at, 8);
  const length = u32(bytes, 0);
  if (length > reader.size - at - 12) throw new ImageDecodeError("PNG truncated: a chunk runs past the end of the file");
  return { length, type: u32(bytes, 4) };
}

/** Sequential reads served from a window of WINDOW_BYTES, so chunk headers and small pieces cost no request each. */
class WindowReader {
  private window: Uint8Array = new Uint8Array(0);
  private start = 0;
  readonly size: number;
  private readonly source: ByteSource;
  constructor(source: ByteSource) {
    this.source = source;
    this.size = source.size;
  }
  async read(offset: number, length: number): Promise<Uint8Array> {
    if (offset < this.start || offset + length > this.start + this.window.length) {
      this.start = offset;
      this.window = await this.source.read(offset, Math.min(this.size - offset, Math.max(length, WINDOW_BYTES)));
    }
    return this.window.subarray(offset - this.start, offset - this.start + length);
  }
}

/** The image's rows in order: inflated from the IDAT chunks (CRCs checked), unfiltered. */
class PngRowStream {
  /** Index of the row the next read returns. */
  next = 0;
  private readonly reader: WindowReader;
  private readonly header: PngHeader;
  private readonly firstIdat: number;
  private readonly rowBytes: number;
  private readonly step: number;
  private readonly expected: number;
  private current: Uint8Array;
  private above: Uint8Array;
  private at = 0; // file position of the next chunk header, or of the next IDAT data byte
  private left = 0; // data bytes of the current IDAT not yet pushed
  private crc = 0;
  private inIdat = false;
  private verified = false; // the current IDAT's CRC was checked up front
  private ended = false;
  private inflated = 0;
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  private pendingStart = 0; // bytes of pending[0] already taken
  private inflater!: Unzlib;

  constructor(reader: WindowReader, header: PngHeader, firstIdat: number) {
    this.reader = reader;
    this.header = header;
    this.firstIdat = firstIdat;
    this.rowBytes = pngRowBytes(header);
    this.step = filterStep(header);
    this.expected = pngInflatedBytes(header);
    this.current = new Uint8Array(this.rowBytes);
    this.above = new Uint8Array(this.rowBytes);
    this.restart();
  }

  restart(): void {
    this.next = 0;
    this.at = this.firstIdat;
    this.left = 0;
    this.inIdat = false;
    this.ended = false;
    this.inflated = 0;
    this.pending = [];
    this.pendingBytes = 0;
    this.pendingStart = 0;
    this.current.fill(0); // the row above the first: read() moves it to `above`
    this.inflater = new Unzlib((chunk) => {
      this.inflated += chunk.length;
      if (this.inflated > this.expected) {
        throw new ImageDecodeError(`PNG image data inflates past the ${this.expected} bytes the image can hold: file corrupt or forged`);
      }
      if (chunk.length > 0) {
        this.pending.push(chunk);
        this.pendingBytes += chunk.length;
      }
    });
  }

  /** The next row, unfiltered (valid until the next call). */
  async read(): Promise<Uint8Array> {
    if (this.next >= this.header.height) throw new RangeError("PNG has no more rows");
    try {
      while (this.pendingBytes < this.rowBytes + 1) {
        if (!(await this.push())) {
          const have = this.inflated;
          throw new ImageDecodeError(`PNG truncated: image data inflates to ${have} of ${this.expected} bytes`);
        }
      }
      [this.current, this.above] = [this.above, this.current];
      const filter = this.take(1)[0]!;
      this.takeInto(this.current);
      unfilterRow(filter, this.current, this.above, this.step);
      this.next++;
      return this.current;
    } catch (error) {
      this.restart(); // the stream's state is unknown after a failure: the next read starts over
      throw error;
    }
  }

  private take(n: number): Uint8Array {
    const out = new Uint8Array(n);
    this.takeInto(out);
    return out;
  }

  private takeInto(out: Uint8Array): void {
    for (let filled = 0; filled < out.length; ) {
      const chunk = this.pending[0]!;
      const n = Math.min(out.length - filled, chunk.length - this.pendingStart);
      out.set(chunk.subarray(this.pendingStart, this.pendingStart + n), filled);
      filled += n;
      this.pendingStart += n;
      this.pendingBytes -= n;
      if (this.pendingStart === chunk.length) {
        this.pending.shift();
        this.pendingStart = 0;
      }
    }
  }

  /** Pushes up to PUSH_BYTES more of the image data into the inflater; false once IEND is reached. */
  private async push(): Promise<boolean> {
    while (this.left === 0) {
      if (this.ended) return false;
      if (this.inIdat) {
        if (!this.verified && u32(await this.reader.read(this.at, 4), 0) !== this.crc) {
          throw new ImageDecodeError(`PNG corrupt: CRC mismatch in an IDAT chunk ending at byte ${this.at}`);
        }
        this.at += 4;
        this.inIdat = false;
      }
      const { length, type } = await chunkHeader(this.reader, this.at);
      if (type === IDAT) {
        this.inIdat = true;
        this.left = length;
        this.verified = length <= VERIFIED_CHUNK_BYTES;
        if (this.verified) {
          // Type, data and CRC in one read; the pushes below are served from the same window.
          const chunk = await this.reader.read(this.at + 4, length + 8);
          if (crc32(chunk.subarray(0, 4 + length)) !== u32(chunk, 4 + length))
            throw new ImageDecodeError(`PNG corrupt: CRC mismatch in chunk at byte ${this.at}`);
        } else {
          this.crc = crc32(await this.reader.read(this.at + 4, 4));
        }
        this.at += 8;
      } else if (type === IEND) {
        this.ended = true;
      } else {
        this.at += 12 + length;
      }
    }
    const n = Math.min(PUSH_BYTES, this.left);
    const data = await this.reader.read(this.at, n);
    if (!this.verified) this.crc = crc32(data, this.crc);
    this.at += n;
    this.left -= n;
    try {
      this.inflater.push(data);
    } catch (error) {
      if (error instanceof ImageDecodeError) throw error;
      throw new ImageDecodeError(`PNG image data is corrupt: ${(error as Error).message}`);
    }
    return true;
  }
}
