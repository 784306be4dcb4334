// A 100,000-ROI synthetic segmentation (8000 x 5000 pixels) through every export. The outputs are
// checked as they stream, never collected, as a client with little memory would read them.

import { beforeAll, describe, expect, it } from "vitest";
import type { Roi } from "../../../schema/roi.ts";
import type { ExportContext } from "../../../schema/measurements.ts";
import { EXPORTS } from "../../../worker/exports/index.ts";
import { artifactBody, encodeToBytes, storeArtifact } from "./helpers/artifact-store.ts";
import { decodeImageJRoi } from "../../../worker/annotations/imagej-roi-decoder.ts";
import { doubledSignedArea } from "./helpers/polygons.ts";
import { inRasterOrder, roisFromShapes, syntheticShapes } from "./helpers/rois-from-runs.ts";
import { readZipEnd, walkStoredZip } from "./helpers/stored-zip-walker.ts";

const COLUMNS = 400,
  ROWS = 250,
  TILE = 20;
const WIDTH = COLUMNS * TILE,
  HEIGHT = ROWS * TILE;
const KEY = "orgs/test/segmentations/large/rois.artifact";
let rois: Roi[];

const context: ExportContext = {
  segmentationId: "seg_large",
  segmentationSource: "model",
  modelName: "nuclei",
  imageName: "plate 3, well B7.tif",
  imageWidth: WIDTH,
  imageHeight: HEIGHT,
  confluency: 0.25,
};

async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let rest = "";
  for await (const text of stream.pipeThrough(new TextDecoderStream())) {
    const parts = (rest + text).split("\n");
    rest = parts.pop()!;
    yield* parts;
  }
  if (rest !== "") yield rest;
}

beforeAll(async () => {
  rois = roisFromShapes(inRasterOrder(syntheticShapes(COLUMNS, ROWS, TILE, 2024)));
  await storeArtifact(KEY, await encodeToBytes({ imageWidth: WIDTH, imageHeight: HEIGHT, confluency: 0.25, modelName: "nuclei", modelVersion: "1" }, rois));
}, 60_000);

describe("a 100,000-ROI segmentation", () => {
  it("has 100,000 ROIs", () => {
    expect(rois).toHaveLength(100_000);
  });

  it("measurements.csv: a header and 100,000 rows in order", async () => {
    const file = await EXPORTS["measurements.csv"](await artifactBody(KEY), context, { columns: ["roi_index", "area_px"] });
    let count = 0;
    for await (const line of lines(file.body)) {
      if (count === 0) expect(line).toBe("roi_index,area_px\r");
      else if (count % 9973 === 0 || count === rois.length) expect(line).toBe(`${count},${rois[count - 1].area_px}\r`);
      count++;
    }
    expect(count).toBe(rois.length + 1);
  }, 60_000);

  it("rois.geojson: 100,000 closed, counter-clockwise polygons of the right area", async () => {
    const file = await EXPORTS["rois.geojson"](await artifactBody(KEY), context, {});
    let features = 0;
    const wrong: number[] = [];
    for await (const line of lines(file.body)) {
      if (!line.startsWith('{"type":"Feature"')) continue;
      const ring: number[][] = JSON.parse(line.replace(/,$/, "")).geometry.coordinates[0];
      const closed = ring[0][0] === ring.at(-1)![0] && ring[0][1] === ring.at(-1)![1];
      // A positive shoelace sum is counter-clockwise by RFC 7946's rule; its half is the area.
      if (!closed || doubledSignedArea(ring.slice(0, -1).flat()) !== 2 * rois[features].area_px) wrong.push(features);
      features++;
    }
    expect(wrong).toEqual([]);
    expect(features).toBe(rois.length);
  }, 60_000);

  it("rois.zip: 100,000 ordered .roi entries and ZIP64 end records that count them", async () => {
    const file = await EXPORTS["rois.zip"](await artifactBody(KEY), context, {});
    let previous = "";
    let index = 0;
    const wrong: string[] = [];
    const walk = await walkStoredZip(file.body, (name, data) => {
      const decoded = decodeImageJRoi(data);
      const roi = rois[index++];
      const sameBounds =
        decoded.left === roi.bbox_x && decoded.top === roi.bbox_y && decoded.right === roi.bbox_x + roi.bbox_w && decoded.bottom === roi.bbox_y + roi.bbox_h;
      if (!(name > previous) || !sameBounds || decoded.polygon.length !== roi.polygon.length) wrong.push(name);
      previous = name;
    });
    expect(wrong).toEqual([]);
    expect(walk.entries).toBe(rois.length);
    const end = readZipEnd(walk.tail, walk.totalBytes);
    expect(end.zip64).toBe(true);
    expect(end.entries).toBe(rois.length);
    expect(end.directoryOffset + end.directorySize).toBe(walk.totalBytes - 56 - 20 - 22);
  }, 60_000);

  it("masks.png becomes a 32-bit TIFF whose label histogram equals every ROI's area", async () => {
    const file = await EXPORTS["masks.png"](await artifactBody(KEY), context, {});
    expect(file.contentType).toBe("image/tiff");
    expect(file.fileName).toBe("plate 3, well B7-masks.tif");
    const histogram = new Float64Array(rois.length + 1);
    let header: DataView | null = null;
    let dataOffset = 0;
    let total = 0;
    let carry = new Uint8Array(0);
    for await (const chunk of file.body) {
      let bytes = chunk;
      if (header === null) {
        header = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
        expect(header.getUint16(0, true)).toBe(0x4949);
        expect(header.getUint16(2, true)).toBe(42);
        const ifd = header.getUint32(4, true);
        const tags = new Map<number, number>();
        for (let i = 0; i < header.getUint16(ifd, true); i++) {
          const at = ifd + 2 + 12 * i;
          const type = header.getUint16(at + 2, true);
          tags.set(header.getUint16(at, true), type === 3 ? header.getUint16(at + 8, true) : header.getUint32(at + 8, true));
        }
        expect(tags.get(256)).toBe(WIDTH);
        expect(tags.get(257)).toBe(HEIGHT);
        expect(tags.get(258)).toBe(32);
        expect(tags.get(339)).toBe(1);
        dataOffset = tags.get(273)!;
        expect(chunk.length).toBe(dataOffset); // the header travels alone, pixels follow
        total += chunk.length;
        continue;
      }
      total += bytes.length;
      if (carry.length > 0) {
        const joined = new Uint8Array(carry.length + bytes.length);
        joined.set(carry);
        joined.set(bytes, carry.length);
        bytes = joined;
      }
      const whole = bytes.length - (bytes.length % 4);
      const view = new DataView(bytes.buffer, bytes.byteOffset, whole);
      for (let i = 0; i < whole; i += 4) histogram[view.getUint32(i, true)]++;
      carry = bytes.slice(whole);
    }
    expect(total).toBe(dataOffset + WIDTH * HEIGHT * 4);
    let mismatched = 0;
    for (const roi of rois) if (histogram[roi.index + 1] !== roi.area_px) mismatched++;
    expect(mismatched).toBe(0);
    expect(histogram[0]).toBe(WIDTH * HEIGHT - rois.reduce((s, r) => s + r.area_px, 0));
  }, 60_000);
});
