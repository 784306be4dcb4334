// Reads an image's header (never its pixels): format, size, channels, bit depth, planes. The rules
// (signatures, channel counts, TIFF page layout, limits) are schema/image-formats', the ones the
// engine's decoders apply, so the probe accepts what the engine decodes; this file only gets the
// header bytes, cheaply and from a budgeted number of ranged reads, out of a stored file.
import {
  checkImageSize,
  checkRegionImageSize,
  checkTiffBlock,
  checkTiffStoredBytes,
  checkTiffValueBytes,
  describeTiffPage,
  ImageDecodeError,
  isJpegFrameMarker,
  isJpegStandaloneMarker,
  JPEG_WORKING_CHANNELS,
  jpegChannels,
  jpegEndsWithEoi,
  jpegFrameFits,
  MAX_JPEG_SEGMENTS_BEFORE_FRAME,
  MAX_TIFF_DESCRIPTION_BYTES,
  MAX_TIFF_DIRECTORIES,
  MAX_TIFF_ENTRIES,
  MAX_TIFF_TAG_VALUES,
  maxInflatedBytes,
  pngEndsWithIend,
  pngInflatedBytes,
  pngWorkingChannels,
  readPngHeader,
  sniffImageFormat,
  Tag,
  TAGS_READ,
  tiffChannelNames,
  tiffPageLayout,
  tiffStoredBytes,
  tiffCalibration,
  TYPE_SIZE,
  type ImageFormat,
  type PixelSize,
  type TiffTags,
} from "../../schema/image-formats/index.ts";
import { r2ByteSource, ReadBudgetError, type ByteSource, type RangedReader } from "./byte-source.ts";

export interface ImageInfo {
  format: ImageFormat;
  width: number;
  height: number;
  channels: number;
  bitDepth: number;
  planes: number;
  /** Micrometres per pixel from the file's metadata (TIFF only); null when it has none. */
  pixelSize: PixelSize | null;
  /** Why the file's resolution gives no pixel size (a default, a size no microscope produces); null otherwise. */
  pixelSizeWarning: string | null;
  /** The channels' names (OME-XML); null when the file names none. */
  channelNames: string[] | null;
}

/**
 * What a probe may read of a stored file: R2 requests (a Worker's subrequests are limited, and
 * each costs) and bytes. Enough for a few thousand contiguous TIFF directories or about a
 * thousand scattered ones.
 */
export const PROBE_READ_BUDGET = { reads: 1000, bytes: 16 * 1024 * 1024 };

/** Values read of one tag: the probe checks the first blocks' offsets, not every one. */
const MAX_VALUES_READ = 4096;

const invalid = (message: string) => new ImageDecodeError(message, "invalid");

/** Probes the object stored under `key`, within PROBE_READ_BUDGET. */
export function probeStoredObject(bucket: RangedReader, key: string, size: number): Promise<ImageInfo> {
  return probeImage(r2ByteSource(bucket, key, size, PROBE_READ_BUDGET));
}

export async function probeImage(source: ByteSource): Promise<ImageInfo> {
  try {
    const format = sniffImageFormat(await source.read(0, 16));
    if (!format) throw new ImageDecodeError("File is not a supported image: expected TIFF, PNG or JPEG", "unsupported");
    return format === "png" ? await probePng(source) : format === "jpeg" ? await probeJpeg(source) : await probeTiff(source);
  } catch (error) {
    if (error instanceof ReadBudgetError) throw new ImageDecodeError(`Image headers are too scattered to read: ${error.message}`, "too-large");
    throw error;
  }
}

async function probePng(source: ByteSource): Promise<ImageInfo> {
  const chunk = await source.read(8, 25);
  if (chunk.length < 25) throw invalid("PNG is truncated before its IHDR chunk");
  const view = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  if (view.getUint32(0) !== 13 || String.fromCharCode(...chunk.subarray(4, 8)) !== "IHDR") throw invalid("PNG does not start with an IHDR chunk");
  const header = readPngHeader(chunk.subarray(8, 21));
  // The runner reads a PNG by rows, so only an interlaced one (decoded whole) is held to the whole-image bound.
  (header.interlaced ? checkImageSize : checkRegionImageSize)(header.width, header.height, pngWorkingChannels(header));
  if (maxInflatedBytes(8, source.size) < pngInflatedBytes(header)) {
    throw invalid(`PNG is truncated: ${source.size} bytes cannot hold a ${header.width}x${header.height} image`);
  }
  // A complete PNG ends with an IEND chunk; anything else was cut off in transit.
  if (!pngEndsWithIend(await source.read(source.size - 8, 8))) throw invalid("PNG is truncated: it does not end with an IEND chunk");
  return {
    format: "png",
    width: header.width,
    height: header.height,
    channels: header.channels,
    bitDepth: header.sampleBits,
    planes: 1,
    pixelSize: null,
    pixelSizeWarning: null,
    channelNames: null,
  };
}

async function probeJpeg(source: ByteSource): Promise<ImageInfo> {
  let offset = 2;
  for (let segments = 0; offset + 4 <= source.size; segments++) {
    if (segments > MAX_JPEG_SEGMENTS_BEFORE_FRAME)
      throw invalid(`JPEG corrupt: no frame header in its first ${MAX_JPEG_SEGMENTS_BEFORE_FRAME} marker segments`);
    const marker = await source.read(offset, 4);
    if (marker[0] !== 0xff) throw invalid(`JPEG marker expected at byte ${offset}`);
    const code = marker[1];
    if (code === 0xff) {
      offset += 1; // fill byte
      continue;
    }
    if (isJpegStandaloneMarker(code)) {
      if (code === 0xd9) break;
      offset += 2;
      continue;
    }
    if (code === 0xda) break;
    const length = (marker[2] << 8) | marker[3];
    if (length < 2) throw invalid(`JPEG marker segment at byte ${offset} is shorter than its length field`);
    if (isJpegFrameMarker(code)) {
      const frame = await source.read(offset + 4, 6);
      if (frame.length < 6) break;
      const [bitDepth, , , , , components] = frame;
      const height = (frame[1] << 8) | frame[2];
      const width = (frame[3] << 8) | frame[4];
      if (width === 0 || height === 0 || components === 0) throw invalid(`JPEG has an invalid frame ${width}x${height} with ${components} components`);
      checkImageSize(width, height, JPEG_WORKING_CHANNELS);
      if (!jpegFrameFits(width, height, source.size - (offset + 2 + length)))
        throw invalid(`JPEG is truncated: ${source.size} bytes cannot hold a ${width}x${height} frame`);
      if (!jpegEndsWithEoi(await source.read(source.size - 2, 2))) throw invalid("JPEG is truncated: it does not end with an EOI marker");
      return {
        format: "jpeg",
        bitDepth,
        height,
        width,
        channels: jpegChannels(components),
        planes: 1,
        pixelSize: null,
        pixelSizeWarning: null,
        channelNames: null,
      };
    }
    offset += 2 + length;
  }
  throw invalid("JPEG has no frame header (SOF marker)");
}

interface TagRead {
  values: number[];
  count: number;
  text?: string;
  /** The directory entry, to read more of the values later. */
  entry: Uint8Array;
}

async function probeTiff(source: ByteSource): Promise<ImageInfo> {
  const head = await source.read(0, 16);
  const little = head[0] === 0x49;
  const big = (little ? head[2] | (head[3] << 8) : (head[2] << 8) | head[3]) === 43;
  const view = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);
  const u16 = (b: Uint8Array, at: number) => view(b).getUint16(at, little);
  const u32 = (b: Uint8Array, at: number) => view(b).getUint32(at, little);
  const u64 = (b: Uint8Array, at: number) => {
    const value = view(b).getBigUint64(at, little);
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw invalid("TIFF has an offset or count past any file size");
    return Number(value);
  };
  const offsetSize = big ? 8 : 4;
  const readOffset = (b: Uint8Array, at: number) => (big ? u64(b, at) : u32(b, at));
  const entrySize = big ? 20 : 12;
  const countSize = big ? 8 : 2;
  if (head.length < (big ? 16 : 8)) throw invalid("TIFF is truncated inside its header");
  if (big && (u16(head, 4) !== 8 || u16(head, 6) !== 0)) throw new ImageDecodeError("BigTIFF header has an unsupported offset size", "unsupported");

  const readTag = async (entry: Uint8Array, maxValues = MAX_VALUES_READ): Promise<TagRead | undefined> => {
    const type = u16(entry, 2);
    const count = big ? u64(entry, 4) : u32(entry, 4);
    const size = TYPE_SIZE[type];
    if (!size) return undefined;
    const inline = size * count <= offsetSize;
    const at = inline ? -1 : readOffset(entry, big ? 12 : 8);
    if (!inline && at + size * count > source.size) throw invalid(`TIFF is truncated: tag ${u16(entry, 0)} points past the end of the file`);
    const wanted = Math.min(count, type === 2 ? MAX_TIFF_DESCRIPTION_BYTES : maxValues);
    const bytes = inline ? entry.subarray(big ? 12 : 8) : await source.read(at, wanted * size);
    if (type === 2) {
      let end = wanted;
      while (end > 0 && bytes[end - 1] === 0) end--;
      return { values: [], count, text: new TextDecoder("latin1").decode(bytes.subarray(0, end)), entry };
    }
    const values: number[] = [];
    for (let i = 0; i < wanted; i++) values.push(numberAt(bytes, type, i));
    return { values, count, entry };
  };
  const numberAt = (bytes: Uint8Array, type: number, i: number): number => {
    const v = view(bytes);
    switch (type) {
      case 1:
      case 7:
        return bytes[i];
      case 6:
        return v.getInt8(i);
      case 3:
        return u16(bytes, 2 * i);
      case 8:
        return v.getInt16(2 * i, little);
      case 4:
      case 13:
        return u32(bytes, 4 * i);
      case 9:
        return v.getInt32(4 * i, little);
      case 5:
        return u32(bytes, 8 * i) / u32(bytes, 8 * i + 4);
      case 10:
        return v.getInt32(8 * i, little) / v.getInt32(8 * i + 4, little);
      case 11:
        return v.getFloat32(4 * i, little);
      case 12:
        return v.getFloat64(8 * i, little);
      default:
        return Number(type === 17 ? v.getBigInt64(8 * i, little) : v.getBigUint64(8 * i, little));
    }
  };

  // Walk the directory chain: the first directory's tags, then only each directory's count and next offset.
  let ifdOffset = readOffset(head, big ? 8 : 4);
  let first: Map<number, TagRead> | null = null;
  let pages = 0;
  const seen = new Set<number>();
  while (ifdOffset !== 0) {
    if (seen.has(ifdOffset)) throw invalid("TIFF directory chain loops");
    if (pages >= MAX_TIFF_DIRECTORIES) throw new ImageDecodeError(`TIFF has more than ${MAX_TIFF_DIRECTORIES} directories`, "too-large");
    if (ifdOffset + countSize > source.size) throw invalid("TIFF is truncated: a directory points past the end of the file");
    seen.add(ifdOffset);
    const count = big ? u64(await source.read(ifdOffset, countSize), 0) : u16(await source.read(ifdOffset, countSize), 0);
    if (count > MAX_TIFF_ENTRIES) throw invalid(`TIFF directory has ${count} entries, more than the ${MAX_TIFF_ENTRIES} allowed`);
    const tableEnd = ifdOffset + countSize + count * entrySize;
    if (tableEnd + offsetSize > source.size) throw invalid("TIFF is truncated inside an image directory");
    if (!first) {
      first = new Map();
      const table = await source.read(ifdOffset + countSize, count * entrySize);
      let valueBytes = 0;
      for (let i = 0; i < count; i++) {
        const entry = table.subarray(i * entrySize, (i + 1) * entrySize);
        const size = (TYPE_SIZE[u16(entry, 2)] ?? 0) * (big ? u64(entry, 4) : u32(entry, 4));
        if (size > offsetSize) valueBytes += size;
      }
      checkTiffValueBytes(valueBytes, source.size);
      for (let i = 0; i < count; i++) {
        const entry = table.subarray(i * entrySize, (i + 1) * entrySize);
        const tag = u16(entry, 0);
        if (!TAGS_READ.has(tag) || first.has(tag)) continue;
        const value = await readTag(entry);
        if (value) first.set(tag, value);
      }
    }
    pages++;
    ifdOffset = readOffset(await source.read(tableEnd, offsetSize), 0);
  }
  if (!first) throw invalid("TIFF has no image directory");

  const tags: TiffTags = {
    numbers: (tag) => (first.get(tag)?.text === undefined ? first.get(tag)?.values : undefined),
    count: (tag) => first.get(tag)?.count ?? 0,
  };
  // The runner reads TIFFs by region: the bounds are per block and the whole image's is the one segmentation reads.
  const page = describeTiffPage(tags, 0, { regions: true });
  const description = first.get(Tag.ImageDescription)?.text;
  const layout = tiffPageLayout(description, pages, page.samplesPerPixel);
  const channels = layout.channelPages * page.samplesPerPixel;
  checkRegionImageSize(page.width, page.height, channels);
  const offsets = tags.numbers(page.tiled ? Tag.TileOffsets : Tag.StripOffsets)!;
  const countsTag = page.tiled ? Tag.TileByteCounts : Tag.StripByteCounts;
  const counts = tags.numbers(countsTag);
  for (let b = 0; b < Math.min(page.blocks, offsets.length); b++) checkTiffBlock(page, 0, b, offsets[b], counts?.[b], source.size);
  // Compressed blocks that share their bytes make the runner's work grow with blocks x file size:
  // every byte count of the first page is read (one more read, at most MAX_TIFF_TAG_VALUES values)
  // to hold their sum to the file's size, as the engine's readers do for every page they read.
  const countsRead = first.get(countsTag);
  if (page.compression !== 1 && countsRead) {
    const all = countsRead.values.length >= page.blocks ? countsRead : await readTag(countsRead.entry, MAX_TIFF_TAG_VALUES);
    checkTiffStoredBytes(tiffStoredBytes(page, all?.values), source.size);
  }
  const calibration = tiffCalibration(description, tags);
  return {
    format: "tiff",
    width: page.width,
    height: page.height,
    channels,
    bitDepth: page.bitsPerSample,
    planes: layout.planes,
    pixelSize: calibration.pixelSize,
    pixelSizeWarning: calibration.warning,
    channelNames: tiffChannelNames(description, channels),
  };
}
