// Reads an image's header (never its pixels): format, size, channels, bit depth, planes.
// Formats from their specifications: TIFF 6.0 and BigTIFF, PNG (RFC 2083 / ISO 15948),
// JPEG (ITU T.81 markers). The full decoders live in the GPU runner's engine; this only has to
// tell, cheaply and from ranged reads, whether a stored file is an image the engine can read.
import type { ByteSource } from "./byte-source.ts";

export interface ImageInfo {
  format: "tiff" | "png" | "jpeg";
  width: number;
  height: number;
  channels: number;
  bitDepth: number;
  planes: number;
}

export class ImageProbeError extends Error {
  /** "unsupported": not a format we read at all (415); "invalid": a broken file of a known format (422). */
  readonly kind: "unsupported" | "invalid";
  constructor(kind: "unsupported" | "invalid", message: string) {
    super(message);
    this.kind = kind;
  }
}

const invalid = (message: string) => new ImageProbeError("invalid", message);
const MAX_SIDE = 1 << 20;
const MAX_TIFF_PAGES = 100_000;

export type ImageFormat = ImageInfo["format"];

/** Recognises a format from the first bytes (8 are enough). */
export function sniffFormat(head: Uint8Array): ImageFormat | null {
  if (head.length >= 8 && head[0] === 0x89 && head[1] === 0x50 && head[2] === 0x4e && head[3] === 0x47) return "png";
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return "jpeg";
  if (head.length >= 4 && ((head[0] === 0x49 && head[1] === 0x49) || (head[0] === 0x4d && head[1] === 0x4d))) {
    const magic = head[0] === 0x49 ? head[2] | (head[3] << 8) : (head[2] << 8) | head[3];
    if (magic === 42 || magic === 43) return "tiff";
  }
  return null;
}

export async function probeImage(source: ByteSource): Promise<ImageInfo> {
  const head = await source.read(0, 16);
  const format = sniffFormat(head);
  if (!format) throw new ImageProbeError("unsupported", "File is not a supported image: expected TIFF, PNG or JPEG");
  const info = format === "png" ? await probePng(source) : format === "jpeg" ? await probeJpeg(source) : await probeTiff(source);
  if (info.width < 1 || info.height < 1 || info.width > MAX_SIDE || info.height > MAX_SIDE) {
    throw invalid(`${format.toUpperCase()} has an implausible size ${info.width}x${info.height}`);
  }
  return info;
}

async function probePng(source: ByteSource): Promise<ImageInfo> {
  const header = await source.read(8, 25);
  if (header.length < 25) throw invalid("PNG is truncated before its IHDR chunk");
  const view = new DataView(header.buffer, header.byteOffset, header.byteLength);
  if (view.getUint32(0) !== 13 || String.fromCharCode(...header.subarray(4, 8)) !== "IHDR") throw invalid("PNG does not start with an IHDR chunk");
  const bitDepth = header[16];
  const colorType = header[17];
  const channels = { 0: 1, 2: 3, 3: 3, 4: 2, 6: 4 }[colorType];
  if (channels === undefined || ![1, 2, 4, 8, 16].includes(bitDepth)) throw invalid(`PNG has an invalid colour type ${colorType} / bit depth ${bitDepth}`);
  // A complete PNG ends with an IEND chunk; anything else was cut off in transit.
  const tail = await source.read(source.size - 8, 8);
  if (String.fromCharCode(...tail.subarray(0, 4)) !== "IEND") throw invalid("PNG is truncated: it does not end with an IEND chunk");
  return { format: "png", width: view.getUint32(8), height: view.getUint32(12), channels, bitDepth: colorType === 3 ? 8 : bitDepth, planes: 1 };
}

async function probeJpeg(source: ByteSource): Promise<ImageInfo> {
  let offset = 2;
  while (offset + 4 <= source.size) {
    const marker = await source.read(offset, 4);
    if (marker[0] !== 0xff) throw invalid(`JPEG marker expected at byte ${offset}`);
    const code = marker[1];
    if (code === 0xff) {
      offset += 1; // fill byte
      continue;
    }
    const length = (marker[2] << 8) | marker[3];
    // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC) carry the frame size.
    if (code >= 0xc0 && code <= 0xcf && code !== 0xc4 && code !== 0xc8 && code !== 0xcc) {
      const frame = await source.read(offset + 4, 6);
      if (frame.length < 6) break;
      const tail = await source.read(source.size - 2, 2);
      if (tail[0] !== 0xff || tail[1] !== 0xd9) throw invalid("JPEG is truncated: it does not end with an EOI marker");
      return { format: "jpeg", bitDepth: frame[0], height: (frame[1] << 8) | frame[2], width: (frame[3] << 8) | frame[4], channels: frame[5], planes: 1 };
    }
    if (code === 0xd9 || code === 0xda) break;
    offset += 2 + length;
  }
  throw invalid("JPEG has no frame header (SOF marker)");
}

const TIFF_TYPE_SIZE: Record<number, number> = { 1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8, 16: 8, 17: 8, 18: 8 };
const SUPPORTED_COMPRESSION: Record<number, string> = { 1: "none", 5: "LZW", 8: "Deflate", 32946: "Deflate", 32773: "PackBits" };

async function probeTiff(source: ByteSource): Promise<ImageInfo> {
  const head = await source.read(0, 16);
  const little = head[0] === 0x49;
  const big = (little ? head[2] | (head[3] << 8) : (head[2] << 8) | head[3]) === 43;
  const view = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);
  const u16 = (b: Uint8Array, at: number) => view(b).getUint16(at, little);
  const u32 = (b: Uint8Array, at: number) => view(b).getUint32(at, little);
  const u64 = (b: Uint8Array, at: number) => Number(view(b).getBigUint64(at, little));
  const offsetSize = big ? 8 : 4;
  const readOffset = (b: Uint8Array, at: number) => (big ? u64(b, at) : u32(b, at));

  const entrySize = big ? 20 : 12;
  const countSize = big ? 8 : 2;
  let ifdOffset = readOffset(head, big ? 8 : 4);
  let first: Map<number, number[]> | null = null;
  let pages = 0;
  const seen = new Set<number>();

  const tagValues = async (entry: Uint8Array): Promise<number[]> => {
    const type = u16(entry, 2);
    const count = big ? u64(entry, 4) : u32(entry, 4);
    const size = TIFF_TYPE_SIZE[type];
    if (!size) return [];
    const inline = size * count <= offsetSize;
    const wanted = Math.min(count, 4096); // enough for any tag the probe reads
    const bytes = inline ? entry.subarray(big ? 12 : 8) : await source.read(readOffset(entry, big ? 12 : 8), wanted * size);
    const values: number[] = [];
    for (let i = 0; i < wanted && (i + 1) * size <= bytes.length; i++) {
      values.push(size === 1 ? bytes[i] : size === 2 ? u16(bytes, i * 2) : size === 4 ? u32(bytes, i * 4) : u64(bytes, i * 8));
    }
    return values;
  };

  while (ifdOffset !== 0) {
    if (seen.has(ifdOffset) || pages >= MAX_TIFF_PAGES) throw invalid("TIFF directory chain loops or is too long");
    if (ifdOffset + countSize > source.size) throw invalid("TIFF is truncated: a directory points past the end of the file");
    seen.add(ifdOffset);
    const countBytes = await source.read(ifdOffset, countSize);
    const count = big ? u64(countBytes, 0) : u16(countBytes, 0);
    const table = await source.read(ifdOffset + countSize, count * entrySize + offsetSize);
    if (table.length < count * entrySize + offsetSize) throw invalid("TIFF is truncated inside an image directory");
    if (!first) {
      first = new Map();
      for (let i = 0; i < count; i++) {
        const entry = table.subarray(i * entrySize, (i + 1) * entrySize);
        const tag = u16(entry, 0);
        if ([256, 257, 258, 259, 273, 277, 279, 324, 325].includes(tag)) first.set(tag, await tagValues(entry));
      }
    }
    pages++;
    ifdOffset = readOffset(table, count * entrySize);
  }
  if (!first) throw invalid("TIFF has no image directory");

  const width = first.get(256)?.[0];
  const height = first.get(257)?.[0];
  if (!width || !height) throw invalid("TIFF directory lacks ImageWidth/ImageLength");
  const compression = first.get(259)?.[0] ?? 1;
  if (!SUPPORTED_COMPRESSION[compression]) {
    throw new ImageProbeError("unsupported", `TIFF compression ${compression} is not supported (supported: none, LZW, Deflate, PackBits)`);
  }
  const offsets = first.get(273) ?? first.get(324) ?? [];
  const counts = first.get(279) ?? first.get(325) ?? [];
  if (offsets.length === 0) throw invalid("TIFF directory has no strip or tile offsets");
  for (let i = 0; i < Math.min(offsets.length, counts.length); i++) {
    if (offsets[i] + counts[i] > source.size) throw invalid("TIFF is truncated: image data extends past the end of the file");
  }
  return {
    format: "tiff",
    width,
    height,
    channels: first.get(277)?.[0] ?? 1,
    bitDepth: first.get(258)?.[0] ?? 1,
    planes: pages,
  };
}
