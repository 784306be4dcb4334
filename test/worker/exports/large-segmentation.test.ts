// A 100,000-ROI synthetic segmentation (8000 x 5000 pixels) through every export (masks.png refuses it). The outputs are
// checked as they stream, never collected, as a client with little memory would read them.

import { beforeAll, describe, expect, it } from "vitest";
import type { Roi } from "../../../schema/roi.ts";
import type { ExportContext } from "../../../schema/measurements.ts";
import { inflateSync } from "node:zlib";
import { readTiffFile, Tag } from "../../../common/decode/tiff-directory.ts";
import { EXPORTS, exportErrorStatus } from "../../../worker/exports/index.ts";
import { artifactBody, encodeToBytes, storeArtifact } from "./helpers/artifact-store.ts";
import { decodeImageJRoi } from "../../../worker/annotations/imagej-roi-decoder.ts";
import { doubledSignedArea } from "./helpers/polygons.ts";
import { inRasterOrder, roisFromShapes, syntheticShapes } from "../../fixtures/rois-from-runs.ts";
import { readZipEnd, walkStoredZip } from "./helpers/stored-zip-walker.ts";

const COLUMNS = 400,
  ROWS = 250,
  TILE = 20;
const WIDTH = COLUMNS * TILE,
  HEIGHT = ROWS * TILE;
const KEY = "orgs/test/segmentations/large/rois.artifact";
let rois: Roi[];
const reread = () => artifactBody(KEY);

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
    const file = await EXPORTS["measurements.csv"](await artifactBody(KEY), context, { columns: ["roi_index", "area_px"] }, reread);
    let count = 0;
    for await (const line of lines(file.body)) {
      if (count === 0) expect(line).toBe("roi_index,area_px\r");
      else if (count % 9973 === 0 || count === rois.length) expect(line).toBe(`${count},${rois[count - 1]?.area_px}\r`);
      count++;
    }
    expect(count).toBe(rois.length + 1);
  }, 60_000);

  it("rois.geojson: 100,000 closed, counter-clockwise polygons of the right area", async () => {
    const file = await EXPORTS["rois.geojson"](await artifactBody(KEY), context, {}, reread);
    let features = 0;
    const wrong: number[] = [];
    for await (const line of lines(file.body)) {
      if (!line.startsWith('{"type":"Feature"')) continue;
      const ring: number[][] = JSON.parse(line.replace(/,$/, "")).geometry.coordinates[0];
      const [first, last] = [ring[0], ring.at(-1)];
      const closed = first !== undefined && last !== undefined && first[0] === last[0] && first[1] === last[1];
      // A positive shoelace sum is counter-clockwise by RFC 7946's rule; its half is the area.
      const roi = rois[features];
      if (!closed || roi === undefined || doubledSignedArea(ring.slice(0, -1).flat()) !== 2 * roi.area_px) wrong.push(features);
      features++;
    }
    expect(wrong).toEqual([]);
    expect(features).toBe(rois.length);
  }, 60_000);

  it("rois.zip: 100,000 ordered .roi entries and ZIP64 end records that count them", async () => {
    const file = await EXPORTS["rois.zip"](await artifactBody(KEY), context, {}, reread);
    let previous = "";
    let index = 0;
    const wrong: string[] = [];
    const walk = await walkStoredZip(file.body, (name, data) => {
      const decoded = decodeImageJRoi(data);
      const roi = rois[index++];
      if (roi === undefined) throw new Error(`entry ${name} is past the ${rois.length} ROIs`);
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

  it("masks.png refuses it (422), naming the cell count and masks.tif", async () => {
    const refusal = await EXPORTS["masks.png"](await artifactBody(KEY), context, {}, reread).then(
      () => null,
      (e: unknown) => e,
    );
    expect(exportErrorStatus(refusal)).toBe(422);
    expect((refusal as Error).message).toMatch(/has 100000 cells; masks\.png holds at most 65535 .*masks\.tif/);
  });

  it("masks.tif streams its directory, then one band of tiles at a time, whose labels count every ROI's area", async () => {
    const file = await EXPORTS["masks.tif"](await artifactBody(KEY), context, {}, reread);
    expect(file.contentType).toBe("image/tiff");
    expect(file.fileName).toBe("plate 3, well B7-masks.tif");
    const histogram = new Float64Array(rois.length + 1);
    let tiles: { offsets: readonly number[]; counts: readonly number[]; width: number; length: number; across: number } | null = null;
    let position = 0;
    let band = 0;
    let largest = 0;
    for await (const chunk of file.body) {
      if (tiles === null) {
        // The header travels alone: directory and tile tables, nothing of the pixels.
        const dir = readTiffFile(chunk).directory(0);
        expect([dir.numbers(Tag.ImageWidth), dir.numbers(Tag.ImageLength), dir.numbers(Tag.BitsPerSample)]).toEqual([[WIDTH], [HEIGHT], [32]]);
        expect([dir.numbers(Tag.Compression), dir.numbers(Tag.SampleFormat)]).toEqual([[8], [1]]);
        const [width] = dir.numbers(Tag.TileWidth) ?? [];
        const [length] = dir.numbers(Tag.TileLength) ?? [];
        if (width === undefined || length === undefined) throw new Error("masks.tif states no tile size");
        tiles = {
          offsets: dir.numbers(Tag.TileOffsets)!,
          counts: dir.numbers(Tag.TileByteCounts)!,
          width,
          length,
          across: Math.ceil(WIDTH / width),
        };
        expect(tiles.offsets[0]).toBe(chunk.length);
        position = chunk.length;
        continue;
      }
      // Every later chunk is exactly one band: the next `across` tiles, each inflating to a whole tile.
      largest = Math.max(largest, chunk.length);
      let at = 0;
      for (let t = band * tiles.across; t < (band + 1) * tiles.across; t++) {
        expect(tiles.offsets[t]).toBe(position + at);
        expect(t).toBeLessThan(tiles.counts.length);
        const count = tiles.counts[t]!;
        const labels = new Uint32Array(inflateSync(chunk.subarray(at, at + count)).buffer.slice(0));
        expect(labels.length).toBe(tiles.width * tiles.length);
        const x0 = (t % tiles.across) * tiles.width;
        const y0 = band * tiles.length;
        // Inside the tile, whose length was just checked; a label is 0 or a roi_index, at most rois.length.
        for (let y = 0; y < Math.min(tiles.length, HEIGHT - y0); y++)
          for (let x = 0; x < Math.min(tiles.width, WIDTH - x0); x++) histogram[labels[y * tiles.width + x]!]!++;
        at += count;
      }
      expect(at).toBe(chunk.length);
      position += chunk.length;
      band++;
    }
    expect(band).toBe(Math.ceil(HEIGHT / tiles!.length));
    // Far smaller than the 160 MB of raw labels: the body never held the image.
    expect(largest).toBeLessThan(WIDTH * tiles!.length * 4);
    let mismatched = 0;
    for (const roi of rois) if (histogram[roi.index + 1] !== roi.area_px) mismatched++;
    expect(mismatched).toBe(0);
    expect(histogram[0]).toBe(WIDTH * HEIGHT - rois.reduce((s, r) => s + r.area_px, 0));
  }, 120_000);
});
