import { describe, expect, it } from "vitest";
import { INTENSITY_STATS, type Roi } from "../../../schema/roi.ts";
import { RoiArtifactError, ROI_ARTIFACT_TARGET_CHUNK_PAYLOAD } from "../../../schema/roi-artifact.ts";
import type { RoiArtifactContents } from "../../../schema/roi-artifact.ts";
import { env } from "cloudflare:workers";
import { readRoiArtifact, readRoiArtifactChunks } from "../../../common/roi-artifact/reader.ts";
import { chunkRunFor, indexRoiArtifact } from "../../../common/roi-artifact/index.ts";
import { RoiArtifactAccumulator, RoiArtifactWriter } from "../../../common/roi-artifact/writer.ts";
import { artifactBody, encodeToBytes, storeArtifact } from "./helpers/artifact-store.ts";
import { inRasterOrder, roisFromShapes, syntheticShapes } from "../../fixtures/rois-from-runs.ts";
import { smallDescription, smallRois } from "./helpers/small-segmentation.ts";
import { streamInPieces } from "./helpers/streams.ts";
import smallV1Base64 from "./golden/small-v1.artifact.base64?raw";
import { crc32 } from "../../../common/crc32.ts";

async function readAll(contents: RoiArtifactContents): Promise<Roi[]> {
  const rois: Roi[] = [];
  for await (const roi of contents.rois) rois.push(roi);
  return rois;
}

const gridRois = roisFromShapes(inRasterOrder(syntheticShapes(60, 40, 20, 7)));
const gridDescription = { imageWidth: 1200, imageHeight: 800, confluency: 0.3, modelName: "nuclei", modelVersion: "v2 (α)" };

describe("ROI artifact", () => {
  it("round-trips header and ROIs through R2 exactly", async () => {
    await storeArtifact("artifact/small", await encodeToBytes(smallDescription, smallRois));
    const contents = await readRoiArtifact(await artifactBody("artifact/small"));
    expect(contents.header).toEqual({
      ...smallDescription,
      roiCount: smallRois.length,
      vertexCount: smallRois.reduce((n, r) => n + r.polygon.length / 2, 0),
    });
    expect(await readAll(contents)).toEqual(smallRois);
  });

  it("splits thousands of ROIs into chunks and reads them back from any network split", async () => {
    const bytes = await encodeToBytes(gridDescription, gridRois);
    expect(bytes.length).toBeGreaterThan(2 * ROI_ARTIFACT_TARGET_CHUNK_PAYLOAD);
    for (const piece of [7, 4096, 1 << 20]) {
      const rois = await readAll(await readRoiArtifact(streamInPieces(bytes, piece)));
      expect(rois).toEqual(gridRois);
    }
    const small = await encodeToBytes(smallDescription, smallRois);
    expect(await readAll(await readRoiArtifact(streamInPieces(small, 1)))).toEqual(smallRois);
  });

  it("is the same file when the counts are learnt from the ROIs as they arrive (the runner's block-wise path)", async () => {
    const accumulator = new RoiArtifactAccumulator(gridDescription);
    for (const roi of gridRois) accumulator.add(roi);
    expect(accumulator.roiCount).toBe(gridRois.length);
    const parts = accumulator.finish(gridDescription.confluency);
    expect(new Uint8Array(await new Blob(parts as Uint8Array<ArrayBuffer>[]).arrayBuffer())).toEqual(await encodeToBytes(gridDescription, gridRois));
    const late = new RoiArtifactAccumulator(gridDescription);
    late.add(gridRois[0]!);
    expect(() => late.add(gridRois[2]!)).toThrow(RoiArtifactError); // each ROI is still checked: here its index
  });

  it("stays compact: about two bytes per vertex plus a few dozen per ROI", async () => {
    const bytes = await encodeToBytes(gridDescription, gridRois);
    const vertices = gridRois.reduce((n, r) => n + r.polygon.length / 2, 0);
    expect(bytes.length).toBeLessThan(2.2 * vertices + 40 * gridRois.length);
  });

  it("yields the first ROI before the rest of the file has arrived", async () => {
    const bytes = await encodeToBytes(gridDescription, gridRois);
    const firstChunkEnd = ROI_ARTIFACT_TARGET_CHUNK_PAYLOAD + 8 * 1024;
    let delivered = 0;
    const stalling = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (delivered >= firstChunkEnd) return new Promise<void>(() => {}); // the rest never comes
        controller.enqueue(bytes.slice(delivered, delivered + 1024));
        delivered += 1024;
      },
    });
    const contents = await readRoiArtifact(stalling);
    const first = await contents.rois.next();
    expect(first.value).toEqual(gridRois[0]);
    expect(delivered).toBeLessThan(bytes.length / 2);
    await contents.rois.return?.(undefined);
  });

  describe("rejects damaged files with a RoiArtifactError, never a hang", () => {
    async function readBytes(bytes: Uint8Array): Promise<Roi[]> {
      return readAll(await readRoiArtifact(streamInPieces(bytes, 4096)));
    }

    it("truncated anywhere", async () => {
      const bytes = await encodeToBytes(smallDescription, smallRois);
      for (const cut of [0, 5, 20, 40, bytes.length - 30, bytes.length - 1]) {
        await expect(readBytes(bytes.slice(0, cut))).rejects.toThrow(RoiArtifactError);
      }
      await expect(readBytes(bytes.slice(0, 40))).rejects.toThrow(/truncated/);
    });

    it("with a flipped bit in a chunk (CRC)", async () => {
      const bytes = await encodeToBytes(smallDescription, smallRois);
      bytes[bytes.length - 40]! ^= 0x10;
      await expect(readBytes(bytes)).rejects.toThrow(/corrupt \(CRC mismatch\)/);
    });

    it("with a flipped bit in the header (CRC)", async () => {
      const bytes = await encodeToBytes(smallDescription, smallRois);
      bytes[14]! ^= 0x01;
      await expect(readBytes(bytes)).rejects.toThrow(/header is corrupt/);
    });

    it("that is not an artifact or from a future version", async () => {
      await expect(readBytes(new TextEncoder().encode("PK\u0003\u0004 this is a zip file"))).rejects.toThrow(/bad magic/);
      const bytes = await encodeToBytes(smallDescription, smallRois);
      bytes[4] = 9;
      await expect(readBytes(bytes)).rejects.toThrow(/version 9 is not supported/);
    });

    it("with a chunk length beyond the limit", async () => {
      const bytes = await encodeToBytes(smallDescription, smallRois);
      const headerLength = 12 + new DataView(bytes.buffer).getUint32(8, true) + 4;
      new DataView(bytes.buffer).setUint32(headerLength + 4, 0x7fffffff, true);
      await expect(readBytes(bytes)).rejects.toThrow(/payload of 2147483647 bytes is outside/);
    });

    it("with bytes after the end marker", async () => {
      const bytes = await encodeToBytes(smallDescription, smallRois);
      const longer = new Uint8Array(bytes.length + 3);
      longer.set(bytes);
      await expect(readBytes(longer)).rejects.toThrow(/after the end marker/);
    });
  });

  describe("the writer refuses ROIs that break the contract", () => {
    // The small fixture's first three ROIs, in raster order (it has more).
    const [first, second, third] = [smallRois[0]!, smallRois[1]!, smallRois[2]!];
    const header = { ...smallDescription, roiCount: smallRois.length, vertexCount: smallRois.reduce((n, r) => n + r.polygon.length / 2, 0) };

    it("out of raster order", () => {
      const writer = new RoiArtifactWriter(header);
      writer.add(first);
      writer.add(second);
      const above = { ...third, bbox_y: 0, polygon: third.polygon.map((v, i) => (i % 2 ? v - 2 : v)) };
      expect(() => writer.add(above)).toThrow(/raster order/);
    });

    it("with an index out of sequence", () => {
      expect(() => new RoiArtifactWriter(header).add(second)).toThrow(/has index 1/);
    });

    it("whose polygon leaves its bounding box or the image", () => {
      const wider = { ...first, bbox_w: first.bbox_w + 1 };
      expect(() => new RoiArtifactWriter(header).add(wider)).toThrow(/polygon spans/);
      const outside = { ...first, bbox_x: 38 };
      expect(() => new RoiArtifactWriter(header).add(outside)).toThrow(/not inside the 40x30 image/);
    });

    it("fewer or more than the header announced", () => {
      const writer = new RoiArtifactWriter(header);
      writer.add(first);
      expect(() => writer.finish()).toThrow(/wrote 1 ROIs/);
      const full = new RoiArtifactWriter({ ...header, roiCount: 1, vertexCount: first.polygon.length / 2 });
      full.add(first);
      expect(() => full.add(second)).toThrow(/more ROIs than the 1/);
    });
  });
});

describe("ROI artifact version 2: intensities per channel", () => {
  const channelNames = ["DAPI", "Alexa 488 (GFP)", "µ-Kanal 細胞"];
  /** Each ROI with 6 numbers per channel, some of them not round. */
  const withIntensity = (rois: readonly Roi[]) =>
    rois.map((r) => ({ ...r, intensity: Float64Array.from({ length: channelNames.length * INTENSITY_STATS.length }, (_, i) => (r.index + 1) * 1000 + i / 7) }));
  const v2Small = withIntensity(smallRois);
  const v2Description = { ...smallDescription, channelNames };

  it("still reads a version-1 file written before version 2 existed, and writes version 1 when there are no intensities", async () => {
    const old = Uint8Array.from(atob(smallV1Base64.trim()), (c) => c.charCodeAt(0));
    expect(old[4]).toBe(1);
    const contents = await readRoiArtifact(streamInPieces(old, 5));
    expect(contents.header).not.toHaveProperty("channelNames");
    expect(await readAll(contents)).toEqual(smallRois);
    expect(await encodeToBytes(smallDescription, smallRois)).toEqual(old);
  });

  it("names the channels in the header and carries every ROI's intensities exactly", async () => {
    const bytes = await encodeToBytes(v2Description, v2Small);
    expect(new DataView(bytes.buffer).getUint16(4, true)).toBe(2);
    for (const piece of [3, 4096]) {
      const contents = await readRoiArtifact(streamInPieces(bytes, piece));
      expect(contents.header.channelNames).toEqual(channelNames);
      expect(await readAll(contents)).toEqual(v2Small);
    }
  });

  it("reads a region's ROIs with their intensities through the chunk index", async () => {
    const rois = withIntensity(gridRois);
    const bytes = await encodeToBytes({ ...gridDescription, channelNames }, rois);
    const index = await indexRoiArtifact(streamInPieces(bytes, 1 << 16));
    const [offset, length, firstIndex, count] = index.chunks[2]!;
    const found: Roi[] = [];
    for await (const roi of readRoiArtifactChunks(streamInPieces(bytes.slice(offset, offset + length), 999), index.header, firstIndex, 1)) found.push(roi);
    expect(found).toEqual(rois.slice(firstIndex, firstIndex + count));
  });

  it("refuses ROIs whose intensities do not match the header's channels, and flags it does not know", async () => {
    const [plain, measured] = [smallRois[0]!, v2Small[0]!]; // the fixture's first ROI, without and with intensities
    const header = { ...v2Description, roiCount: 1, vertexCount: plain.polygon.length / 2 };
    expect(() => new RoiArtifactWriter(header).add(plain)).toThrow(/intensities must be 18 numbers/);
    expect(() => new RoiArtifactWriter(header).add({ ...measured, intensity: new Float64Array(12) })).toThrow(/intensities must be 18 numbers/);
    const v1Header = { ...smallDescription, roiCount: 1, vertexCount: plain.polygon.length / 2 };
    expect(() => new RoiArtifactWriter(v1Header).add(measured)).toThrow(/none without channels/);
    const bytes = await encodeToBytes(v2Description, v2Small);
    // The flags follow the model name and version in the header body.
    const flagsAt = 12 + 4 * 4 + 8 + 2 + smallDescription.modelName.length + 2 + smallDescription.modelVersion.length;
    expect(new DataView(bytes.buffer).getUint32(flagsAt, true)).toBe(1);
    const unknown = bytes.slice();
    const view = new DataView(unknown.buffer);
    view.setUint32(flagsAt, 5, true);
    const bodyEnd = 12 + view.getUint32(8, true);
    view.setUint32(bodyEnd, crc32(unknown.subarray(0, bodyEnd)), true); // a well-formed header that says more than this reader knows
    await expect(readRoiArtifact(streamInPieces(unknown, 64))).rejects.toThrow(/unknown record flags 5/);
  });
});

describe("ROI artifact version 2: cells grown around the nuclei", () => {
  /** Each nucleus's cell: its box grown by one pixel where the image allows, and a cytoplasm to measure. */
  const withCells = (rois: readonly Roi[], channels: number, width: number, height: number) =>
    rois.map((r) => {
      const x0 = Math.max(0, r.bbox_x - 1),
        y0 = Math.max(0, r.bbox_y - 1),
        x1 = Math.min(width, r.bbox_x + r.bbox_w + 1),
        y1 = Math.min(height, r.bbox_y + r.bbox_h + 1);
      const stats = (base: number) => (channels ? Float64Array.from({ length: channels * INTENSITY_STATS.length }, (_, i) => base + i) : undefined);
      return {
        ...r,
        ...(channels ? { intensity: stats(r.index) } : {}),
        cell: {
          polygon: new Int32Array([x0, y0, x1, y0, x1, y1, x0, y1]),
          area_px: (x1 - x0) * (y1 - y0),
          perimeter_px: 2 * (x1 - x0 + y1 - y0),
          centroid_x: (x0 + x1) / 2,
          centroid_y: (y0 + y1) / 2,
          bbox_x: x0,
          bbox_y: y0,
          bbox_w: x1 - x0,
          bbox_h: y1 - y0,
          ...(channels ? { cytoplasmIntensity: stats(-r.index - 0.5) } : {}),
        },
      };
    });

  it("carries each nucleus's cell and its cytoplasm's intensities, with or without channels", async () => {
    for (const channelNames of [["DAPI", "GFP"], undefined]) {
      const rois = withCells(smallRois, channelNames?.length ?? 0, 40, 30);
      const bytes = await encodeToBytes({ ...smallDescription, ...(channelNames && { channelNames }), cells: true }, rois);
      expect(new DataView(bytes.buffer).getUint16(4, true)).toBe(2);
      const contents = await readRoiArtifact(streamInPieces(bytes, 11));
      expect(contents.header).toMatchObject({ cells: true });
      expect(await readAll(contents)).toEqual(rois);
    }
  });

  it("refuses a cell that the header does not announce, one missing, and one whose box does not hold its nucleus", () => {
    const nucleus = smallRois[0]!; // the fixture's first ROI
    const header = { ...smallDescription, roiCount: 1, vertexCount: nucleus.polygon.length / 2 };
    const [cellular] = withCells(smallRois, 0, 40, 30);
    expect(() => new RoiArtifactWriter(header).add(cellular!)).toThrow(/has a cell, but the header announces none/);
    expect(() => new RoiArtifactWriter({ ...header, cells: true }).add(nucleus)).toThrow(/has no cell/);
    const small = { ...cellular!, cell: { ...cellular!.cell, polygon: nucleus.polygon, bbox_x: nucleus.bbox_x + 1 } };
    expect(() => new RoiArtifactWriter({ ...header, cells: true }).add(small)).toThrow(RoiArtifactError);
  });
});

describe("the ROI artifact's chunk index", () => {
  const wideShapes = inRasterOrder(syntheticShapes(150, 100, 20, 11));
  const wideRois = roisFromShapes(wideShapes);
  const wideDescription = { imageWidth: 3000, imageHeight: 2000, confluency: 0.3, modelName: "nuclei", modelVersion: "1" };

  it("lists every chunk in file order, back to back, with the ROIs each holds", async () => {
    const bytes = await encodeToBytes(wideDescription, wideRois);
    const index = await indexRoiArtifact(streamInPieces(bytes, 4096));
    expect(index.header.roiCount).toBe(wideRois.length);
    expect(index.chunks.length).toBeGreaterThan(10);
    let next = index.chunks[0]![0];
    let firstIndex = 0;
    for (const [offset, length, first, count] of index.chunks) {
      expect([offset, first]).toEqual([next, firstIndex]);
      next = offset + length;
      firstIndex += count;
    }
    expect(firstIndex).toBe(wideRois.length);
    expect(next).toBe(bytes.length - 12); // the end marker follows the last chunk
    expect(index.maxExtent).toBe(Math.max(...wideRois.map((r) => Math.max(r.bbox_w, r.bbox_h))));
  });

  it("finds a region's ROIs in a ranged read of a few chunks", async () => {
    const bytes = await encodeToBytes(wideDescription, wideRois);
    await storeArtifact("artifact/indexed", bytes);
    const index = await indexRoiArtifact(await artifactBody("artifact/indexed"));
    const region = { x0: 1024, y0: 1024, x1: 2048, y1: 1536 };
    const run = chunkRunFor(index, region)!;
    expect(run.length).toBeLessThan(bytes.length / 3);
    const ranged = await (env as unknown as { BUCKET: R2Bucket }).BUCKET.get("artifact/indexed", { range: { offset: run.offset, length: run.length } });
    const found: Roi[] = [];
    for await (const roi of readRoiArtifactChunks(ranged!.body, index.header, run.firstIndex, run.chunkCount)) {
      if (roi.bbox_x >= region.x0 && roi.bbox_x < region.x1 && roi.bbox_y >= region.y0 && roi.bbox_y < region.y1) found.push(roi);
    }
    const expected = wideRois.filter((r) => r.bbox_x >= region.x0 && r.bbox_x < region.x1 && r.bbox_y >= region.y0 && r.bbox_y < region.y1);
    expect(expected.length).toBeGreaterThan(500);
    expect(found).toEqual(expected);
    expect(chunkRunFor(index, { x0: 0, y0: 2000, x1: 3000, y1: 2100 })).toBeNull();
  });

  it("refuses a ranged read that is not the chunks it was asked for", async () => {
    const bytes = await encodeToBytes(wideDescription, wideRois);
    const index = await indexRoiArtifact(streamInPieces(bytes, 1 << 20));
    const [offset, length, firstIndex] = index.chunks[3]!;
    const read = async (slice: Uint8Array, first: number) => {
      for await (const _ of readRoiArtifactChunks(streamInPieces(slice, 4096), index.header, first, 1)) {
        // reading through is the check
      }
    };
    await expect(read(bytes.slice(offset, offset + length), firstIndex)).resolves.toBeUndefined();
    await expect(read(bytes.slice(offset, offset + length - 1), firstIndex)).rejects.toThrow(RoiArtifactError);
    await expect(read(bytes.slice(offset + 1, offset + length + 1), firstIndex)).rejects.toThrow(RoiArtifactError);
  });
});
