// The tiles of an NDPI page's restart-marked JPEG (schema/image-formats/ndpi.ts holds the rules):
// where each lies in the file, and the header each one is decoded behind. The method is tifffile's
// (ndpi_jpeg_tile) and OpenSlide's hamamatsu driver's: the frame header keeps the JPEG's tables but
// states a tile's size, so a decoder takes one tile's intervals for a JPEG of their own.
import {
  ImageDecodeError,
  isJpegFrameMarker,
  isJpegStandaloneMarker,
  MAX_NDPI_JPEG_HEADER_BYTES,
  restartTiling,
  type RestartTiling,
  Tag,
  type TiffTags,
} from "../../schema/image-formats/index.ts";
import { outside, type Parse } from "./header-parse.ts";

interface RestartTiles {
  tiling: RestartTiling;
  /** Where each tile's entropy-coded data lies in the file, row by row of tiles. */
  offsets: number[];
  byteCounts: number[];
  /** SOI to SOS, with the frame's size the tile's: the stream each tile's data follows. */
  header: Uint8Array;
}

/** The segments of a JPEG's header that a tile needs, and what they state. */
interface RestartHeader {
  tables: Uint8Array[];
  frame: Uint8Array;
  scan: Uint8Array;
  interval: number;
  mcuWidth: number;
  mcuHeight: number;
}

function corrupt(what: string): never {
  throw new ImageDecodeError(`NDPI image corrupt: ${what}`);
}

/** The page's tiles, or null when it lists no restart intervals (a small level, read as one JPEG strip). */
export function* readRestartTiles(tags: TiffTags, size: number): Parse<RestartTiles | null> {
  const low = tags.numbers(Tag.NdpiMcuStarts);
  if (!low || low.length === 0) return null;
  const high = tags.numbers(Tag.NdpiMcuStartsHigh);
  const starts = low.map((value, i) => value + (high?.[i] ?? 0) * 2 ** 32);
  const stripAt = tags.numbers(Tag.StripOffsets)?.[0];
  const stripBytes = tags.numbers(Tag.StripByteCounts)?.[0];
  if (tags.count(Tag.StripOffsets) !== 1 || stripAt === undefined || stripBytes === undefined) {
    corrupt("restart intervals are listed for a page that is not one JPEG strip");
  }
  if (outside(stripAt, stripBytes, size)) corrupt("its JPEG strip lies outside the file");
  for (let i = 0; i < starts.length; i++) {
    if (!(starts[i]! > (i === 0 ? 0 : starts[i - 1]!) && starts[i]! < stripBytes))
      corrupt(`restart interval ${i} starts at ${starts[i]}, out of order or past its strip's ${stripBytes} bytes`);
  }
  if (starts[0]! > MAX_NDPI_JPEG_HEADER_BYTES) {
    throw new ImageDecodeError(`NDPI image: its JPEG header takes ${starts[0]} bytes, more than the ${MAX_NDPI_JPEG_HEADER_BYTES} allowed`, "too-large");
  }
  const jpeg = restartHeader(yield { offset: stripAt, length: starts[0]!, what: "an NDPI JPEG header" });
  const page = { width: tags.numbers(Tag.ImageWidth)?.[0] ?? 0, height: tags.numbers(Tag.ImageLength)?.[0] ?? 0 };
  const headerBytes = tileHeaderBytes(jpeg);
  const tiling = restartTiling(page, { ...jpeg, headerBytes }, starts.length);
  const rowIntervals = tiling.across * tiling.intervalsPerTile;
  const offsets: number[] = [];
  const byteCounts: number[] = [];
  for (let row = 0; row < tiling.down; row++) {
    for (let column = 0; column < tiling.across; column++) {
      const first = row * rowIntervals + column * tiling.intervalsPerTile;
      const next = first + tiling.intervalsPerTile;
      const end = next < starts.length ? starts[next]! : stripBytes;
      offsets.push(stripAt + starts[first]!);
      byteCounts.push(end - starts[first]!);
    }
  }
  return { tiling, offsets, byteCounts, header: tileHeader(jpeg, tiling) };
}

/** Walks the header (ITU T.81, B.2) to its scan: the tables, frame and scan segments, the restart interval and the MCU's size. */
function restartHeader(bytes: Uint8Array): RestartHeader {
  if (bytes[0] !== 0xff || bytes[1] !== 0xd8) corrupt("its JPEG strip does not start with SOI");
  const tables: Uint8Array[] = [];
  let frame: Uint8Array | undefined;
  let interval = 0;
  let at = 2;
  while (at + 4 <= bytes.length) {
    if (bytes[at] !== 0xff) corrupt("expected a JPEG marker in its header");
    const marker = bytes[at + 1]!;
    if (marker === 0xff || isJpegStandaloneMarker(marker)) {
      at += marker === 0xff ? 1 : 2;
      continue;
    }
    const end = at + 2 + ((bytes[at + 2]! << 8) | bytes[at + 3]!);
    if (end > bytes.length || end < at + 4) corrupt("a JPEG header segment runs past the first restart interval");
    const segment = bytes.subarray(at, end);
    if (marker === 0xdb || marker === 0xc4) tables.push(segment);
    else if (marker === 0xdd) interval = (segment[4]! << 8) | segment[5]!;
    else if (marker === 0xc0 || marker === 0xc1) frame = segment;
    else if (isJpegFrameMarker(marker)) {
      throw new ImageDecodeError(`NDPI image: JPEG process SOF${marker - 0xc0} is not read (baseline and extended Huffman are)`, "unsupported");
    } else if (marker === 0xda) {
      if (!frame) corrupt("its JPEG scan comes before its frame header");
      if (end !== bytes.length) corrupt("its first restart interval does not start where the JPEG scan does");
      if (interval === 0) corrupt("restart intervals are listed but its JPEG declares none (DRI)");
      return { tables, frame, scan: segment, interval, ...mcuOf(frame) };
    }
    at = end;
  }
  return corrupt("its JPEG header has no scan before the first restart interval");
}

/** The MCU's size: 8 pixels times the largest sampling factor of the frame's components. */
function mcuOf(frame: Uint8Array): { mcuWidth: number; mcuHeight: number } {
  const components = frame[9] ?? 0;
  if (components === 0 || frame.length < 10 + 3 * components) corrupt("its JPEG frame header is cut short");
  let [h, v] = [1, 1];
  for (let c = 0; c < components; c++) {
    const sampling = frame[11 + 3 * c]!;
    h = Math.max(h, sampling >> 4);
    v = Math.max(v, sampling & 15);
  }
  return { mcuWidth: 8 * h, mcuHeight: 8 * v };
}

/** Bytes of the header a tile is decoded behind: SOI, the tables, the frame, a DRI when a tile holds several intervals, the scan. */
function tileHeaderBytes(jpeg: RestartHeader): number {
  return 2 + jpeg.tables.reduce((n, t) => n + t.length, 0) + jpeg.frame.length + 6 + jpeg.scan.length;
}

function tileHeader(jpeg: RestartHeader, tiling: RestartTiling): Uint8Array {
  const frame = jpeg.frame.slice();
  frame.set([tiling.tileHeight >> 8, tiling.tileHeight & 255, tiling.tileWidth >> 8, tiling.tileWidth & 255], 5);
  // A tile of one interval needs no restart; one of several keeps the markers between them.
  const restart = tiling.intervalsPerTile > 1 ? [new Uint8Array([0xff, 0xdd, 0, 4, jpeg.interval >> 8, jpeg.interval & 255])] : [];
  const parts = [new Uint8Array([0xff, 0xd8]), ...jpeg.tables, frame, ...restart, jpeg.scan];
  const header = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    header.set(part, at);
    at += part.length;
  }
  return header;
}
