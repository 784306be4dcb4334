// Reads a DICOM whole-slide level's structure through header-parse.ts requests: the data set up to
// Pixel Data (parsed by dicom-parser, read in growing prefixes under MAX_DICOM_HEADER_BYTES), then
// where the frames lie: native frames one after another, encapsulated ones (PS3.5 A.4) through the
// Extended Offset Table or the Basic Offset Table, or, with neither, each frame one item in turn. Every frame start the tables give is checked
// against the file before it is used, so a forged table is refused at upload.
import dicomParser from "dicom-parser";
import { describeDicomLevel, type DicomLevel, ImageDecodeError, MAX_DICOM_FRAMES, MAX_DICOM_HEADER_BYTES } from "../../schema/image-formats/index.ts";
import type { Parse } from "./header-parse.ts";

/** The first read of the header: most levels' data sets are a few kilobytes. */
const FIRST_HEADER_READ = 256 * 1024;

/** An item's tag (FFFE,E000) and the sequence delimiter's (FFFE,E0DD), as little-endian 32-bit words. */
export const ITEM_TAG = 0xe000fffe;
export const SEQUENCE_DELIMITER_TAG = 0xe0ddfffe;

export interface DicomStructure {
  level: DicomLevel;
  /**
   * Encapsulated frames: where each frame's first item starts, in the file, from an offset table;
   * null when the file has none (each frame is then one fragment, found by walking the items
   * from `firstItem`).
   */
  frameStarts: Float64Array | null;
  /** Where the item after the Basic Offset Table starts (encapsulated frames). */
  firstItem: number;
}

const corrupt = (why: string) => new ImageDecodeError(`DICOM corrupt: ${why}`);

export function* readDicomStructure(size: number): Parse<DicomStructure> {
  const { level, extendedOffsets } = yield* readDicomLevel(size);
  if (level.coding === "native") return { level, frameStarts: null, firstItem: level.pixelDataOffset };
  const header = yield { offset: level.pixelDataOffset, length: 8, what: "the Basic Offset Table" };
  const view = new DataView(header.buffer, header.byteOffset, 8);
  const tableBytes = view.getUint32(4, true);
  if (view.getUint32(0, true) !== ITEM_TAG || tableBytes % 4 !== 0) throw corrupt("its encapsulated Pixel Data does not start with a Basic Offset Table item");
  const firstItem = level.pixelDataOffset + 8 + tableBytes;
  if (firstItem > size) throw corrupt("its Basic Offset Table runs past the end of the file");
  if (extendedOffsets) {
    if (extendedOffsets.length !== level.frames) throw corrupt(`its Extended Offset Table lists ${extendedOffsets.length} frames, not ${level.frames}`);
    return { level, frameStarts: frameStartsFrom(extendedOffsets, level.frames, firstItem, size), firstItem };
  }
  if (tableBytes > 0) {
    if (tableBytes / 4 !== level.frames) throw corrupt(`its Basic Offset Table lists ${tableBytes / 4} frames, not ${level.frames}`);
    const table = yield { offset: level.pixelDataOffset + 8, length: tableBytes, what: "the Basic Offset Table" };
    const offsets = new Uint32Array(table.slice().buffer);
    return { level, frameStarts: frameStartsFrom(offsets, level.frames, firstItem, size), firstItem };
  }
  // Without a table each frame is one item of at least its 8-byte header: a count the file cannot hold is forged.
  if (level.frames * 8 > size - firstItem) throw corrupt(`${size - firstItem} bytes of Pixel Data cannot hold ${level.frames} frames`);
  return { level, frameStarts: null, firstItem };
}

type PixelDataElement = { dataOffset: number; length: number; hadUndefinedLength?: boolean };

/**
 * The data set up to Pixel Data, read in prefixes four times longer each until dicom-parser finds
 * Pixel Data in one; a data set longer than MAX_DICOM_HEADER_BYTES is refused.
 *
 * dicom-parser predates the 64-bit VRs, so it misreads the Extended Offset Table's OV length: where
 * the prefix holds that element (its tag and VR, next to Pixel Data at the data set's end),
 * dicom-parser parses the data set before it, and the table, its lengths and Pixel Data's header
 * are read here.
 */
function* readDicomLevel(size: number): Parse<{ level: DicomLevel; extendedOffsets: BigUint64Array | null }> {
  const limit = Math.min(size, MAX_DICOM_HEADER_BYTES);
  for (let length = Math.min(size, FIRST_HEADER_READ); ; length = Math.min(limit, length * 4)) {
    const bytes = yield { offset: 0, length, what: "the DICOM header" };
    const tableAt = indexOf(bytes, EXTENDED_OFFSET_TABLE_HEADER);
    if (tableAt >= 0) {
      const parsed = parsePrefix(bytes.subarray(0, tableAt), false);
      if (!parsed.set) throw corrupt(`its data set cannot be parsed (${parsed.error})`);
      const tail = yield* readOffsetTableAndPixelData(tableAt, size);
      return { level: describeDicomLevel(parsed.set, tail.pixelData), extendedOffsets: tail.offsets };
    }
    const parsed = parsePrefix(bytes, true);
    if (parsed.pixelData) return { level: describeDicomLevel(parsed.set, parsed.pixelData), extendedOffsets: null };
    if (length === limit) {
      if (length < size) {
        throw new ImageDecodeError(`DICOM header longer than the ${MAX_DICOM_HEADER_BYTES} bytes read before Pixel Data`, "too-large");
      }
      throw corrupt(parsed.error ? `its data set cannot be parsed (${parsed.error})` : "it has no Pixel Data");
    }
  }
}

/** (7FE0,0001) with VR OV and its two reserved bytes, as an explicit little-endian element starts. */
const EXTENDED_OFFSET_TABLE_HEADER = Uint8Array.of(0xe0, 0x7f, 0x01, 0x00, 0x4f, 0x56, 0x00, 0x00);

function indexOf(bytes: Uint8Array, pattern: Uint8Array): number {
  const first = pattern[0]!;
  for (let at = bytes.indexOf(first); at >= 0 && at + pattern.length <= bytes.length; at = bytes.indexOf(first, at + 1)) {
    if (pattern.every((b, k) => bytes[at + k] === b)) return at;
  }
  return -1;
}

/** The Extended Offset Table at `at`, its lengths' element after it, then Pixel Data's header (PS3.5 7.1.2, explicit VR little endian). */
function* readOffsetTableAndPixelData(at: number, size: number): Parse<{ offsets: BigUint64Array; pixelData: PixelDataElement }> {
  let offsets: BigUint64Array | undefined;
  for (let element = 0; element < 3; element++) {
    const header = yield { offset: at, length: 12, what: "an element after the Extended Offset Table" };
    const view = new DataView(header.buffer, header.byteOffset, 12);
    const [group, tag, vr, length] = [view.getUint16(0, true), view.getUint16(2, true), String.fromCharCode(header[4]!, header[5]!), view.getUint32(8, true)];
    if (group !== 0x7fe0 || tag !== [0x0001, 0x0002, 0x0010][element]) throw corrupt("its Extended Offset Table is not followed by its lengths and Pixel Data");
    if (tag === 0x0010) {
      if (vr !== "OB" && vr !== "OW") throw corrupt(`its Pixel Data has VR ${vr}`);
      if (!offsets) throw corrupt("its Extended Offset Table is missing");
      return { offsets, pixelData: { dataOffset: at + 12, length, hadUndefinedLength: length === 0xffffffff } };
    }
    if (vr !== "OV" || length % 8 !== 0) throw corrupt("its Extended Offset Table is not a list of 64-bit offsets");
    if (length > 8 * MAX_DICOM_FRAMES) {
      throw new ImageDecodeError(`DICOM's Extended Offset Table lists ${length / 8} frames, more than the ${MAX_DICOM_FRAMES} one level may hold`, "too-large");
    }
    if (tag === 0x0001) {
      const value = yield { offset: at + 12, length, what: "the Extended Offset Table" };
      offsets = new BigUint64Array(value.slice().buffer);
    }
    at += 12 + length;
    if (at > size) throw corrupt("its Extended Offset Table runs past the end of the file");
  }
  throw corrupt("its Extended Offset Table is not followed by Pixel Data");
}

/** dicom-parser's data set of a prefix, with its Pixel Data element when `untilPixelData` and the prefix reaches it. */
function parsePrefix(
  bytes: Uint8Array,
  untilPixelData: boolean,
): { set: dicomParser.DataSet; pixelData?: PixelDataElement; error?: undefined } | { set?: undefined; pixelData?: undefined; error: string } {
  try {
    const set = dicomParser.parseDicom(bytes, untilPixelData ? { untilTag: "x7fe00010" } : {});
    const pixelData = set.elements.x7fe00010;
    return pixelData ? { set, pixelData } : { set };
  } catch (error) {
    // dicom-parser throws strings as well as Errors; a prefix cut inside an element is one of them.
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

/** Absolute starts of the frames' first items from an offset table, each checked to lie in the file and follow the one before. */
function frameStartsFrom(offsets: ArrayLike<number | bigint>, frames: number, firstItem: number, size: number): Float64Array {
  const starts = new Float64Array(frames);
  for (let frame = 0; frame < frames; frame++) {
    const start = firstItem + Number(offsets[frame]!);
    if (!(start + 8 <= size)) throw corrupt(`its offset table places frame ${frame + 1} at byte ${start}, past the end of the ${size}-byte file`);
    if (frame > 0 && start <= starts[frame - 1]!) throw corrupt(`its offset table places frame ${frame + 1} before frame ${frame}`);
    starts[frame] = start;
  }
  return starts;
}
