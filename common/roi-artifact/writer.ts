// Encodes the ROI artifact (layout in roi-artifact.ts) incrementally: ROIs go in one at a time and
// chunks of about ROI_ARTIFACT_TARGET_CHUNK_PAYLOAD bytes come out, so a 100k-ROI segmentation is
// never one buffer. The header carries the counts, so the caller states them up front and the
// writer verifies them at the end.

import type { Roi, RoiMeasurements } from "../../schema/roi.ts";
import { ByteBuilder } from "./bytes.ts";
import { checkRoi, checkRoiArtifactHeader } from "./checks.ts";
import { crc32 } from "../crc32.ts";
import {
  ROI_ARTIFACT_FLAG_CELLS,
  ROI_ARTIFACT_FLAG_INTENSITY,
  ROI_ARTIFACT_MAGIC,
  ROI_ARTIFACT_MAX_HEADER_BODY,
  ROI_ARTIFACT_TARGET_CHUNK_PAYLOAD,
  ROI_ARTIFACT_VERSION,
  ROI_ARTIFACT_VERSION_2,
  RoiArtifactError,
} from "../../schema/roi-artifact.ts";
import type { RoiArtifactHeader } from "../../schema/roi-artifact.ts";

const utf8 = new TextEncoder();

function encodeRoiArtifactHeader(header: RoiArtifactHeader): Uint8Array {
  checkRoiArtifactHeader(header);
  const body = new ByteBuilder(128);
  body.u32(header.imageWidth);
  body.u32(header.imageHeight);
  body.u32(header.roiCount);
  body.u32(header.vertexCount);
  body.f64(header.confluency);
  const text = (value: string, what: string) => {
    const bytes = utf8.encode(value);
    if (bytes.length > 0xffff) throw new RoiArtifactError(`ROI artifact header: ${what} longer than 65,535 bytes`);
    body.u16(bytes.length);
    body.raw(bytes);
  };
  text(header.modelName, "model name");
  text(header.modelVersion, "model version");
  const channels = header.channelNames ?? [];
  const flags = (channels.length > 0 ? ROI_ARTIFACT_FLAG_INTENSITY : 0) | (header.cells ? ROI_ARTIFACT_FLAG_CELLS : 0);
  if (flags !== 0) {
    body.u32(flags);
    body.u16(channels.length);
    for (const name of channels) text(name, "channel name");
  }
  if (body.length > ROI_ARTIFACT_MAX_HEADER_BODY) throw new RoiArtifactError("ROI artifact header: body too large");
  const out = new ByteBuilder(16 + body.length);
  out.raw(ROI_ARTIFACT_MAGIC);
  out.u16(flags !== 0 ? ROI_ARTIFACT_VERSION_2 : ROI_ARTIFACT_VERSION);
  out.u16(0);
  out.u32(body.length);
  out.raw(body.take());
  out.u32(crc32(out.bytes.subarray(0, out.length)));
  return out.take();
}

function encodeRecord(roi: Roi, into: ByteBuilder): void {
  encodeOutline(roi, into);
  if (roi.intensity) for (let i = 0; i < roi.intensity.length; i++) into.f64(roi.intensity[i]!);
  const cell = roi.cell;
  if (cell) {
    encodeOutline(cell, into);
    if (cell.cytoplasmIntensity) for (let i = 0; i < cell.cytoplasmIntensity.length; i++) into.f64(cell.cytoplasmIntensity[i]!);
  }
}

/** Measurements and polygon, shared by the nucleus and its cell. */
function encodeOutline(roi: RoiMeasurements & { polygon: Int32Array }, into: ByteBuilder): void {
  into.varint(roi.area_px);
  into.f64(roi.perimeter_px);
  into.f64(roi.centroid_x);
  into.f64(roi.centroid_y);
  into.varint(roi.bbox_x);
  into.varint(roi.bbox_y);
  into.varint(roi.bbox_w);
  into.varint(roi.bbox_h);
  const p = roi.polygon;
  into.varint(p.length / 2);
  let px = roi.bbox_x;
  let py = roi.bbox_y;
  // checkRoi has made the polygon's length even, so p[i + 1] is in range.
  for (let i = 0; i < p.length; i += 2) {
    const x = p[i]!;
    const y = p[i + 1]!;
    into.zigzag(x - px);
    into.zigzag(y - py);
    px = x;
    py = y;
  }
}

function frameChunk(recordCount: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + payload.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, recordCount, true);
  view.setUint32(4, payload.length, true);
  view.setUint32(8, crc32(payload), true);
  out.set(payload, 12);
  return out;
}

// Exported for its test only (test/worker/exports/roi-artifact.test.ts).
/** Push-style writer: `add` returns a finished chunk when one fills up, `finish` the rest. */
export class RoiArtifactWriter {
  private readonly header: RoiArtifactHeader;
  private readonly payload = new ByteBuilder(ROI_ARTIFACT_TARGET_CHUNK_PAYLOAD + 4096);
  private recordsInChunk = 0;
  private roisWritten = 0;
  private verticesWritten = 0;
  private previousBboxY = 0;
  private headerBytes: Uint8Array | null;
  /** The counts are learnt from the ROIs (RoiArtifactAccumulator), not announced: no header is sent and none checked. */
  private readonly countsAtEnd: boolean;

  constructor(header: RoiArtifactHeader, options: { countsAtEnd?: boolean } = {}) {
    this.countsAtEnd = options.countsAtEnd ?? false;
    this.headerBytes = this.countsAtEnd ? null : encodeRoiArtifactHeader(header);
    this.header = { ...header };
  }

  /** The ROIs and their vertices added so far. */
  get counts(): { roiCount: number; vertexCount: number } {
    return { roiCount: this.roisWritten, vertexCount: this.verticesWritten };
  }

  /** Adds one ROI; returns the bytes ready to send (the header first, then full chunks). */
  add(roi: Roi): Uint8Array[] {
    checkRoi(roi, this.header, this.roisWritten, this.previousBboxY);
    if (!this.countsAtEnd && this.roisWritten === this.header.roiCount) {
      throw new RoiArtifactError(`ROI artifact: more ROIs than the ${this.header.roiCount} the header announces`);
    }
    const out = this.takeHeader();
    encodeRecord(roi, this.payload);
    this.recordsInChunk++;
    this.roisWritten++;
    this.verticesWritten += roi.polygon.length / 2;
    this.previousBboxY = roi.bbox_y;
    if (this.payload.length >= ROI_ARTIFACT_TARGET_CHUNK_PAYLOAD) out.push(this.closeChunk());
    return out;
  }

  /** Ends the artifact; fails if the ROIs written do not match the header's counts. */
  finish(): Uint8Array[] {
    if (!this.countsAtEnd && (this.roisWritten !== this.header.roiCount || this.verticesWritten !== this.header.vertexCount)) {
      throw new RoiArtifactError(
        `ROI artifact: wrote ${this.roisWritten} ROIs with ${this.verticesWritten} vertices but the header announces ` +
          `${this.header.roiCount} ROIs with ${this.header.vertexCount} vertices`,
      );
    }
    const out = this.takeHeader();
    if (this.recordsInChunk > 0) out.push(this.closeChunk());
    out.push(new Uint8Array(12));
    return out;
  }

  private takeHeader(): Uint8Array[] {
    if (this.headerBytes === null) return [];
    const bytes = this.headerBytes;
    this.headerBytes = null;
    return [bytes];
  }

  private closeChunk(): Uint8Array {
    const chunk = frameChunk(this.recordsInChunk, this.payload.bytes.subarray(0, this.payload.length));
    this.payload.clear();
    this.recordsInChunk = 0;
    return chunk;
  }
}

// Exported for its tests only (test/worker/annotations/helpers/model-segmentation.ts, test/worker/exports/helpers/artifact-store.ts, test/worker/exports/helpers/run-export.ts, test/worker/exports/helpers/small-segmentation.ts).
/** Header fields other than the counts, which `encodeRoiArtifact` computes from the ROIs. */
export type RoiArtifactDescription = Omit<RoiArtifactHeader, "roiCount" | "vertexCount">;

/**
 * The artifact for an in-memory list of ROIs (what the runner holds after segmenting), as a stream
 * of chunks: `ReadableStream.from(encodeRoiArtifact(...))` gives a ReadableStream.
 */
export async function* encodeRoiArtifact(description: RoiArtifactDescription, rois: readonly Roi[]): AsyncGenerator<Uint8Array> {
  let vertexCount = 0;
  for (const roi of rois) vertexCount += roi.polygon.length / 2;
  const writer = new RoiArtifactWriter({ ...description, roiCount: rois.length, vertexCount });
  for (const roi of rois) yield* writer.add(roi);
  yield* writer.finish();
}

/**
 * An artifact of ROIs whose number is known only once the last is in (the runner's block-wise
 * segmentation releases cells a block row at a time): each ROI is encoded into its chunk as it
 * arrives, and the header, which leads the file, is made at the end with the counts and the
 * confluency. Half a million cells held as encoded chunks take some 60 MB; as Roi objects, with
 * their typed arrays, several hundred.
 */
export class RoiArtifactAccumulator {
  private readonly description: Omit<RoiArtifactDescription, "confluency">;
  private readonly writer: RoiArtifactWriter;
  private readonly chunks: Uint8Array[] = [];

  constructor(description: Omit<RoiArtifactDescription, "confluency">) {
    this.description = description;
    this.writer = new RoiArtifactWriter({ ...description, confluency: 0, roiCount: 0, vertexCount: 0 }, { countsAtEnd: true });
  }

  get roiCount(): number {
    return this.writer.counts.roiCount;
  }

  add(roi: Roi): void {
    this.chunks.push(...this.writer.add(roi));
  }

  /** The whole artifact, in order: the header, the chunks, the end marker. */
  finish(confluency: number): Uint8Array[] {
    const tail = this.writer.finish();
    return [encodeRoiArtifactHeader({ ...this.description, confluency, ...this.writer.counts }), ...this.chunks.splice(0), ...tail];
  }
}
