// Decodes the ROI artifact (layout in roi-artifact.ts) from a byte stream such as an R2 object
// body. It holds at most one chunk (<= 4 MiB, typically 64 KiB) plus one network read at a time,
// validates every size before trusting it, and turns a truncated, corrupt or inconsistent file
// into a RoiArtifactError.

import type { Roi, RoiMeasurements } from "../../schema/roi.ts";
import { ByteCursor } from "./bytes.ts";
import { checkRoi, checkRoiArtifactHeader } from "./checks.ts";
import { crc32 } from "../crc32.ts";
import { INTENSITY_STATS } from "../../schema/roi.ts";
import {
  ROI_ARTIFACT_FLAG_CELLS,
  ROI_ARTIFACT_FLAG_INTENSITY,
  ROI_ARTIFACT_MAGIC,
  ROI_ARTIFACT_MAX_CHANNELS,
  ROI_ARTIFACT_MAX_CHUNK_PAYLOAD,
  ROI_ARTIFACT_MAX_HEADER_BODY,
  ROI_ARTIFACT_VERSION,
  ROI_ARTIFACT_VERSION_2,
  RoiArtifactError,
} from "../../schema/roi-artifact.ts";
import type { RoiArtifactContents, RoiArtifactHeader } from "../../schema/roi-artifact.ts";

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

function viewOf(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Reads exact byte counts from a stream, across however the network split it. */
class ExactReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private pending: Uint8Array = new Uint8Array(0);
  private done = false;
  position = 0;

  constructor(stream: ReadableStream<Uint8Array>) {
    this.reader = stream.getReader();
  }

  /** Exactly `n` bytes, or a RoiArtifactError naming `what` if the stream ends first. */
  async read(n: number, what: string): Promise<Uint8Array> {
    if (this.pending.length >= n) return this.consume(n);
    const out = new Uint8Array(n);
    let filled = 0;
    while (filled < n) {
      if (this.pending.length === 0) {
        const more = await this.pull();
        if (!more) throw new RoiArtifactError(`ROI artifact truncated: ${what} needs ${n} bytes at offset ${this.position}, only ${filled} remain`);
      }
      const take = Math.min(n - filled, this.pending.length);
      out.set(this.consume(take), filled);
      filled += take;
    }
    return out;
  }

  async atEnd(): Promise<boolean> {
    while (this.pending.length === 0) if (!(await this.pull())) return true;
    return false;
  }

  cancel(reason?: unknown): Promise<void> {
    return this.reader.cancel(reason).catch(() => undefined);
  }

  private consume(n: number): Uint8Array {
    const out = this.pending.subarray(0, n);
    this.pending = this.pending.subarray(n);
    this.position += n;
    return out;
  }

  private async pull(): Promise<boolean> {
    if (this.done) return false;
    const { value, done } = await this.reader.read();
    if (done) {
      this.done = true;
      return false;
    }
    if (!(value instanceof Uint8Array)) throw new RoiArtifactError("ROI artifact stream must yield Uint8Array chunks");
    this.pending = value;
    return true;
  }
}

async function readHeader(input: ExactReader): Promise<RoiArtifactHeader> {
  const prefix = await input.read(12, "the header");
  for (let i = 0; i < 4; i++) {
    if (prefix[i] !== ROI_ARTIFACT_MAGIC[i]) throw new RoiArtifactError("not an ROI artifact (bad magic)");
  }
  const prefixView = viewOf(prefix);
  const version = prefixView.getUint16(4, true);
  if (version !== ROI_ARTIFACT_VERSION && version !== ROI_ARTIFACT_VERSION_2)
    throw new RoiArtifactError(`ROI artifact version ${version} is not supported (this reader knows ${ROI_ARTIFACT_VERSION} and ${ROI_ARTIFACT_VERSION_2})`);
  const bodyLength = prefixView.getUint32(8, true);
  if (bodyLength > ROI_ARTIFACT_MAX_HEADER_BODY)
    throw new RoiArtifactError(`ROI artifact header body of ${bodyLength} bytes exceeds ${ROI_ARTIFACT_MAX_HEADER_BODY}`);
  const body = await input.read(bodyLength, "the header body");
  const stored = viewOf(await input.read(4, "the header CRC")).getUint32(0, true);
  if (crc32(body, crc32(prefix)) !== stored) throw new RoiArtifactError("ROI artifact header is corrupt (CRC mismatch)");
  const cursor = new ByteCursor(body, "the header body");
  const imageWidth = cursor.u32();
  const imageHeight = cursor.u32();
  const roiCount = cursor.u32();
  const vertexCount = cursor.u32();
  const confluency = cursor.f64();
  const decodeText = (what: string): string => {
    try {
      return utf8.decode(cursor.raw(cursor.u16()));
    } catch (e) {
      if (e instanceof RoiArtifactError) throw e;
      throw new RoiArtifactError(`ROI artifact header: ${what} is not UTF-8`);
    }
  };
  const modelName = decodeText("model name");
  const modelVersion = decodeText("model version");
  const header: RoiArtifactHeader = { imageWidth, imageHeight, roiCount, vertexCount, confluency, modelName, modelVersion };
  if (version === ROI_ARTIFACT_VERSION_2) {
    const flags = cursor.u32();
    if ((flags & ~(ROI_ARTIFACT_FLAG_INTENSITY | ROI_ARTIFACT_FLAG_CELLS)) !== 0)
      throw new RoiArtifactError(`ROI artifact header: unknown record flags ${flags}`);
    const channels = cursor.u16();
    if (channels > ROI_ARTIFACT_MAX_CHANNELS) throw new RoiArtifactError(`ROI artifact header: ${channels} channels, more than ${ROI_ARTIFACT_MAX_CHANNELS}`);
    if (((flags & ROI_ARTIFACT_FLAG_INTENSITY) !== 0) !== channels > 0)
      throw new RoiArtifactError("ROI artifact header: intensities need at least one channel, and channels are named only for them");
    const names: string[] = [];
    for (let c = 0; c < channels; c++) names.push(decodeText("a channel name"));
    if (names.length > 0) header.channelNames = names;
    if ((flags & ROI_ARTIFACT_FLAG_CELLS) !== 0) header.cells = true;
  }
  checkRoiArtifactHeader(header);
  return header;
}

function decodeRecord(cursor: ByteCursor, index: number, header: RoiArtifactHeader, verticesLeft: number): Roi {
  const roi: Roi = { index, ...decodeOutline(cursor, index, verticesLeft) };
  const channels = header.channelNames?.length ?? 0;
  const stats = () => cursor.f64s(channels * INTENSITY_STATS.length);
  if (channels > 0) roi.intensity = stats();
  if (header.cells) {
    // A cell's vertices are not in the header's count; its chunk bounds them.
    roi.cell = decodeOutline(cursor, index, Number.POSITIVE_INFINITY);
    if (channels > 0) roi.cell.cytoplasmIntensity = stats();
  }
  return roi;
}

/** Measurements and polygon, as encodeOutline wrote them. */
function decodeOutline(cursor: ByteCursor, index: number, verticesLeft: number): RoiMeasurements & { polygon: Int32Array } {
  const area_px = cursor.varint();
  const perimeter_px = cursor.f64();
  const centroid_x = cursor.f64();
  const centroid_y = cursor.f64();
  const bbox_x = cursor.varint();
  const bbox_y = cursor.varint();
  const bbox_w = cursor.varint();
  const bbox_h = cursor.varint();
  const vertices = cursor.varint();
  // Every vertex takes at least two bytes, so this bounds the allocation by the chunk's size.
  if (vertices > verticesLeft || vertices * 2 > cursor.remaining) {
    throw new RoiArtifactError(`ROI artifact: ROI ${index} claims ${vertices} vertices, more than its chunk or the header's total can hold`);
  }
  const polygon = new Int32Array(vertices * 2);
  let x = bbox_x;
  let y = bbox_y;
  for (let i = 0; i < polygon.length; i += 2) {
    x += cursor.zigzag();
    y += cursor.zigzag();
    polygon[i] = x;
    polygon[i + 1] = y;
  }
  return { area_px, perimeter_px, centroid_x, centroid_y, bbox_x, bbox_y, bbox_w, bbox_h, polygon };
}

/** Where one chunk lies in the file and what its ROIs span, for common/roi-artifact/index.ts. */
export interface RoiChunkExtent {
  /** Byte offset of the chunk's framing from the start of the file. */
  offset: number;
  /** Framing and payload: 12 + L. */
  bytes: number;
  firstIndex: number;
  count: number;
  /** Smallest and largest bbox_x of its ROIs. */
  minBboxX: number;
  maxBboxX: number;
  /** bbox_y of its first and last ROI (ROIs are in raster order, so every other lies between). */
  firstBboxY: number;
  lastBboxY: number;
  /** Largest bbox_w or bbox_h of its ROIs. */
  maxExtent: number;
}

interface ChunkWalk {
  /** The index of the first ROI the stream holds. */
  firstIndex: number;
  /** Stop after this many chunks instead of at the end marker (a ranged read of some chunks). */
  chunkLimit: number | null;
  onChunk?: (extent: RoiChunkExtent) => void;
}

async function* readRois(input: ExactReader, header: RoiArtifactHeader, walk: ChunkWalk): AsyncGenerator<Roi> {
  const whole = walk.chunkLimit === null;
  let index = walk.firstIndex;
  let verticesSeen = 0;
  let previousBboxY = 0;
  let chunkNumber = 0;
  try {
    while (walk.chunkLimit === null || chunkNumber < walk.chunkLimit) {
      const offset = input.position;
      const frame = viewOf(await input.read(12, `chunk ${chunkNumber} framing`));
      const records = frame.getUint32(0, true);
      const length = frame.getUint32(4, true);
      const storedCrc = frame.getUint32(8, true);
      if (records === 0) {
        if (!whole) throw new RoiArtifactError(`ROI artifact: the end marker came before chunk ${chunkNumber} of ${walk.chunkLimit}`);
        if (length !== 0 || storedCrc !== 0) throw new RoiArtifactError(`ROI artifact: malformed end marker at chunk ${chunkNumber}`);
        break;
      }
      if (length === 0 || length > ROI_ARTIFACT_MAX_CHUNK_PAYLOAD) {
        throw new RoiArtifactError(`ROI artifact: chunk ${chunkNumber} payload of ${length} bytes is outside 1..${ROI_ARTIFACT_MAX_CHUNK_PAYLOAD}`);
      }
      if (records > header.roiCount - index) {
        throw new RoiArtifactError(`ROI artifact: chunk ${chunkNumber} holds ${records} ROIs, more than the ${header.roiCount - index} the header leaves`);
      }
      const payload = await input.read(length, `chunk ${chunkNumber}`);
      if (crc32(payload) !== storedCrc) throw new RoiArtifactError(`ROI artifact: chunk ${chunkNumber} is corrupt (CRC mismatch)`);
      const cursor = new ByteCursor(payload, `chunk ${chunkNumber}`);
      const extent: RoiChunkExtent = {
        offset,
        bytes: 12 + length,
        firstIndex: index,
        count: records,
        minBboxX: Number.POSITIVE_INFINITY,
        maxBboxX: 0,
        firstBboxY: 0,
        lastBboxY: 0,
        maxExtent: 0,
      };
      for (let r = 0; r < records; r++) {
        const roi = decodeRecord(cursor, index, header, header.vertexCount - verticesSeen);
        checkRoi(roi, header, index, previousBboxY);
        verticesSeen += roi.polygon.length / 2;
        previousBboxY = roi.bbox_y;
        if (r === 0) extent.firstBboxY = roi.bbox_y;
        extent.lastBboxY = roi.bbox_y;
        extent.minBboxX = Math.min(extent.minBboxX, roi.bbox_x);
        extent.maxBboxX = Math.max(extent.maxBboxX, roi.bbox_x);
        extent.maxExtent = Math.max(extent.maxExtent, roi.bbox_w, roi.bbox_h);
        index++;
        yield roi;
      }
      if (cursor.remaining !== 0) throw new RoiArtifactError(`ROI artifact: chunk ${chunkNumber} has ${cursor.remaining} bytes after its ${records} records`);
      walk.onChunk?.(extent);
      chunkNumber++;
    }
    if (!whole) return;
    if (index !== header.roiCount || verticesSeen !== header.vertexCount) {
      throw new RoiArtifactError(
        `ROI artifact: ended after ${index} ROIs with ${verticesSeen} vertices; the header announces ${header.roiCount} ROIs with ${header.vertexCount} vertices`,
      );
    }
    if (!(await input.atEnd())) throw new RoiArtifactError("ROI artifact: bytes after the end marker");
  } finally {
    // Also runs when a consumer stops early (return()), releasing the R2 body.
    await input.cancel();
  }
}

/**
 * Reads the header, then returns it with an iterator over the ROIs that decodes one chunk at a
 * time as the consumer asks for more.
 */
export async function readRoiArtifact(
  stream: ReadableStream<Uint8Array>,
  options: { onChunk?: (extent: RoiChunkExtent) => void } = {},
): Promise<RoiArtifactContents> {
  const input = new ExactReader(stream);
  let header: RoiArtifactHeader;
  try {
    header = await readHeader(input);
  } catch (e) {
    await input.cancel();
    throw e;
  }
  const rois = readRois(input, header, { firstIndex: 0, chunkLimit: null, onChunk: options.onChunk });
  // A generator never started runs no `finally` on return(): cancel the input itself too.
  return { header, rois, cancel: async () => void (await Promise.all([rois.return(undefined), input.cancel()])) };
}

/**
 * The ROIs of `chunkCount` consecutive chunks, from a stream that starts at the framing of the
 * chunk whose first ROI is `firstIndex` (a ranged read found through the artifact's index). Every
 * chunk is checked as in a whole read; only the end marker and the totals are not there to check.
 */
export function readRoiArtifactChunks(
  stream: ReadableStream<Uint8Array>,
  header: RoiArtifactHeader,
  firstIndex: number,
  chunkCount: number,
): AsyncGenerator<Roi> {
  return readRois(new ExactReader(stream), header, { firstIndex, chunkLimit: chunkCount });
}
