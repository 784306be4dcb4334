// Untrusted annotation files: each refusal is an AnnotationImportError of a documented kind with a
// detail that names the problem, found before the file can make the worker do unbounded work.

import { encode as encodePng } from "fast-png";
import { zipSync, zlibSync } from "fflate";
import jpeg from "jpeg-js";
import { describe, expect, it, vi } from "vitest";
import { AnnotationImportError, importAnnotation, importErrorStatus } from "../../../worker/annotations/index.ts";
import { MAX_IMPORT_FILE_BYTES, MAX_IMPORT_OBJECTS } from "../../../worker/annotations/limits.ts";
import { OutlineCollector } from "../../../worker/annotations/outlines.ts";
import { stripsSharingLzwData } from "../../fixtures/hostile-images.ts";
import { renderNuclei } from "../../fixtures/image.ts";
import { discField } from "../../fixtures/labels.ts";
import { encodeTiff } from "../../fixtures/tiff-writer.ts";
import {
  combGeoJson,
  combRoi,
  deflateAfterEmptyBlocks,
  featuresAtTheVertexLimit,
  fullImageRectangles,
  labelsAtTopAndBottom,
  oneRingOfPositions,
  rectangleRoi,
  repeatedFeaturesMembers,
  zipOfOverlappingEntries,
} from "../../fixtures/hostile-annotations.ts";
import { ROI_TYPE, roiFile } from "./helpers/imagej-roi-builder.ts";

function refusal(bytes: Uint8Array, width: number, height: number): { kind: string; status: number; detail: string } {
  try {
    importAnnotation(bytes, width, height);
  } catch (error) {
    if (!(error instanceof AnnotationImportError)) throw error;
    return { kind: error.kind, status: importErrorStatus(error.kind), detail: error.message };
  }
  throw new Error("the file was accepted");
}

const text = (s: string) => new TextEncoder().encode(s);
const png = (width: number, height: number, data: Uint16Array | Uint8Array, channels = 1) =>
  encodePng({ width, height, data, depth: data instanceof Uint16Array ? 16 : 8, channels });
const square = (x: number, y: number, s: number) => [
  [x, y],
  [x + s, y],
  [x + s, y + s],
  [x, y + s],
  [x, y],
];
const feature = (coordinates: unknown, type = "Polygon") => ({ type: "Feature", geometry: { type, coordinates } });

describe("files that are not annotations, or cannot be read: 415", () => {
  it("unknown content, whatever the name", () => {
    expect(refusal(text("name,area\ncell,12\n"), 4, 4)).toEqual({
      kind: "unsupported_type",
      status: 415,
      detail: "not an annotation file: expected a label image (PNG or TIFF), an ImageJ ROI (.roi) or ROI archive (.zip), or GeoJSON",
    });
  });

  it("an empty file", () => {
    expect(refusal(new Uint8Array(0), 4, 4)).toMatchObject({ kind: "unreadable", detail: "the file is empty" });
  });

  it("a JPEG, whose compression would change the labels", () => {
    const file = jpeg.encode({ data: new Uint8Array(4 * 4 * 4), width: 4, height: 4 }, 90).data;
    expect(refusal(new Uint8Array(file), 4, 4)).toMatchObject({
      kind: "unsupported_type",
      status: 415,
      detail: expect.stringContaining("JPEG cannot be a label image"),
    });
  });

  it("a JPEG-compressed TIFF, for the same reason", () => {
    const file = encodeTiff([{ width: 8, height: 8, samplesPerPixel: 3, values: new Array(8 * 8 * 3).fill(1), kind: "uint8", compression: "jpeg" }]);
    expect(refusal(file, 8, 8)).toMatchObject({
      kind: "unsupported_type",
      status: 415,
      detail: expect.stringContaining("JPEG-compressed TIFF cannot be a label image"),
    });
  });

  it("a truncated PNG", () => {
    const file = png(16, 16, new Uint16Array(256).fill(3));
    expect(refusal(file.subarray(0, file.length - 30), 16, 16)).toMatchObject({
      kind: "unreadable",
      status: 415,
      detail: expect.stringMatching(/^label image unreadable: PNG/),
    });
  });

  it("a .roi shorter than the vertices it announces", () => {
    const file = roiFile({ type: ROI_TYPE.polygon, vertices: [0, 0, 4, 0, 4, 4, 0, 4] });
    expect(refusal(file.subarray(0, 70), 8, 8)).toMatchObject({
      kind: "unreadable",
      detail: "the ROI is truncated: 4 vertices need 80 bytes, the file has 70",
    });
  });

  it("a ZIP without its central directory", () => {
    const file = zipSync({ "a.roi": roiFile({ type: ROI_TYPE.rect, box: [0, 0, 2, 2] }) });
    expect(refusal(file.subarray(0, 40), 8, 8)).toMatchObject({ kind: "unreadable", detail: expect.stringContaining("no end-of-central-directory record") });
  });

  it("JSON that does not parse, and text that is not UTF-8", () => {
    expect(refusal(text('{"type": "FeatureCollection", '), 8, 8)).toMatchObject({
      kind: "unreadable",
      detail: expect.stringMatching(/^GeoJSON unreadable: not valid JSON/),
    });
    expect(refusal(Uint8Array.of(0x5b, 0xff, 0xfe, 0x5d), 8, 8)).toMatchObject({
      kind: "unreadable",
      detail: "GeoJSON unreadable: the file is not UTF-8 text",
    });
  });
});

describe("readable files that cannot be this image's segmentation: 422", () => {
  it("a label image of another size", () => {
    expect(refusal(png(6, 4, new Uint16Array(24).fill(1)), 8, 4)).toEqual({
      kind: "wrong_size",
      status: 422,
      detail: "the label image is 6x4 but the image is 8x4",
    });
  });

  it("no objects: an all-zero label image, an empty FeatureCollection, outlines that miss the image", () => {
    expect(refusal(png(4, 3, new Uint16Array(12)), 4, 3)).toMatchObject({ kind: "no_objects", status: 422, detail: "no object lies inside the 4x3 image" });
    expect(refusal(text('{"type":"FeatureCollection","features":[]}'), 4, 3)).toMatchObject({ kind: "no_objects" });
    expect(refusal(text(JSON.stringify([feature([square(5, 0, 2)])])), 4, 3)).toMatchObject({ kind: "no_objects" });
  });

  it("more objects than one import may hold", () => {
    const labels = new Uint32Array(400 * 300).map((_, i) => i + 1);
    const file = encodeTiff([{ width: 400, height: 300, samplesPerPixel: 1, values: labels, kind: "uint32", compression: "deflate" }]);
    expect(refusal(file, 400, 300)).toMatchObject({
      kind: "too_many_objects",
      status: 422,
      detail: `the label image holds more than 100,000 objects, the most one import may hold`,
    });
    expect(MAX_IMPORT_OBJECTS).toBe(100_000);
  });

  it("an archive whose (ZIP64) directory claims more entries than that, refused before any is read", () => {
    const zip = zipSync({ "a.roi": roiFile({ type: ROI_TYPE.rect, box: [0, 0, 2, 2] }) });
    const body = zip.subarray(0, zip.length - 22);
    const file = new Uint8Array(body.length + 56 + 20 + 22);
    file.set(body);
    const view = new DataView(file.buffer);
    const record = body.length;
    view.setUint32(record, 0x06064b50, true); // ZIP64 end of central directory
    view.setBigUint64(record + 32, 200_000n, true); // entries in total
    view.setUint32(record + 56, 0x07064b50, true); // locator
    view.setBigUint64(record + 56 + 8, BigInt(record), true);
    view.setUint32(record + 76, 0x06054b50, true); // end of central directory
    view.setUint16(record + 76 + 10, 0xffff, true);
    expect(refusal(file, 8, 8)).toMatchObject({ kind: "too_many_objects", detail: "the archive holds 200,000 entries; one import may hold at most 101,000" });
  });

  it("absurd coordinates: far outside the image, or not finite", () => {
    expect(
      refusal(
        text(
          JSON.stringify([
            feature([
              [
                [0, 0],
                [1e12, 0],
                [0, 5],
                [0, 0],
              ],
            ]),
          ]),
        ),
        8,
        8,
      ),
    ).toMatchObject({
      kind: "limit_exceeded",
      detail: "feature 1: vertex (1000000000000, 0) lies far outside the 8x8 image; coordinates must be image pixel coordinates",
    });
    expect(refusal(text('[{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[[0,0],[1e400,0],[0,5],[0,0]]]}}]'), 8, 8)).toMatchObject({
      kind: "limit_exceeded",
    });
    const nan = roiFile({ type: ROI_TYPE.polygon, vertices: [0.5, 0.5, 3.5, 0.5, 3.5, 3.5], subPixel: true });
    new DataView(nan.buffer).setFloat32(64 + 12, NaN);
    expect(refusal(nan, 8, 8)).toMatchObject({ kind: "limit_exceeded", detail: expect.stringContaining("vertex (NaN, 0.5)") });
  });

  it("outlines that are not areas: a line ROI, a composite ROI, a Point feature", () => {
    expect(refusal(roiFile({ type: ROI_TYPE.line, vertices: [0, 0, 3, 3] }), 8, 8)).toMatchObject({
      kind: "invalid_content",
      detail: "the ROI is a line ROI; only area ROIs (polygon, freehand, traced, rectangle, oval) can be imported",
    });
    const composite = roiFile({ type: ROI_TYPE.rect, box: [0, 0, 2, 2] });
    new DataView(composite.buffer).setInt32(36, 12);
    expect(refusal(composite, 8, 8)).toMatchObject({ kind: "invalid_content", detail: expect.stringContaining("a composite (shape) ROI") });
    expect(refusal(text(JSON.stringify([feature([1, 2], "Point")])), 8, 8)).toMatchObject({
      kind: "invalid_content",
      detail: "GeoJSON: feature 1 has a Point geometry; only Polygon and MultiPolygon outline objects",
    });
  });

  it("a binary mask: one value over separate cells would be one object, so it is refused with what to do", () => {
    const mask = Uint8Array.from([255, 255, 0, 0, 0, 255, 255, 0, 0, 0, 0, 0, 0, 0, 255]);
    expect(refusal(png(5, 3, mask), 5, 3)).toMatchObject({ kind: "invalid_content", status: 422, detail: expect.stringContaining("binary mask") });
  });

  it("the microscope image given as a label image by mistake: said to be an intensity image, before any object is traced", () => {
    // A noisy 8-bit micrograph: nuclei brighter than an uneven background, every pixel a little off its neighbours.
    const width = 96,
      height = 64;
    const scene = discField(width, height, 30, 4, 8, 3);
    const picture = renderNuclei(scene).data;
    let state = 7;
    const noise = () => ((state = (state * 1_103_515_245 + 12_345) >>> 0) % 9) - 4;
    const gray = Uint8Array.from(picture, (v) => Math.max(1, Math.min(255, Math.round(v / 16) + noise())));
    const started = Date.now();
    const refused = refusal(png(width, height, gray), width, height);
    expect(refused).toMatchObject({ kind: "invalid_content", status: 422 });
    expect(refused.detail).toMatch(
      /^this looks like an intensity image \(the microscope's picture\), not a label image: \d+% of neighbouring non-zero pixels differ/,
    );
    expect(Date.now() - started).toBeLessThan(1_000);
    // A label image of small touching cells (5 px wide, a change every fifth pixel) is no such thing.
    const tiles = Uint16Array.from({ length: width * height }, (_, i) => 1 + Math.floor((i % width) / 5) + 20 * Math.floor(Math.floor(i / width) / 5));
    expect(importAnnotation(png(width, height, tiles), width, height).rois.length).toBe(20 * 13);
    expect(importAnnotation(png(width, height, Uint16Array.from(scene.labels)), width, height).rois.length).toBeGreaterThan(10);
  });

  it("label images with several channels, several planes, or values that are not labels", () => {
    expect(refusal(png(2, 2, new Uint8Array(12), 3), 2, 2)).toMatchObject({ kind: "invalid_content", detail: expect.stringContaining("has 3 channels") });
    const page = { width: 2, height: 2, samplesPerPixel: 1, values: [0, 1, 1, 0], kind: "uint16" as const };
    expect(refusal(encodeTiff([page, page]), 2, 2)).toMatchObject({ kind: "invalid_content", detail: "the label image has 2 planes; a label image has one" });
    const fractional = encodeTiff([{ ...page, values: [0, 1.5, 1, 0], kind: "float32" }]);
    expect(refusal(fractional, 2, 2)).toMatchObject({
      kind: "invalid_content",
      detail: "pixel (1, 0) has the value 1.5; labels are whole numbers, 0 for background",
    });
    const huge = encodeTiff([{ ...page, values: [0, 20_000_000, 1, 0], kind: "uint32" }]);
    expect(refusal(huge, 2, 2)).toMatchObject({ kind: "limit_exceeded", detail: expect.stringContaining("label values may be at most 16777216") });
  });
});

describe("bounded work", () => {
  it("a zip bomb: an entry that inflates past the most a .roi may hold is stopped while inflating", () => {
    const bomb = zipSync({ "bomb.roi": [new Uint8Array(32 * 1024 * 1024), { level: 1 }] });
    expect(bomb.length).toBeLessThan(256 * 1024);
    const started = Date.now();
    expect(refusal(bomb, 8, 8)).toMatchObject({ kind: "limit_exceeded", detail: "bomb.roi inflates to more than 2,097,152 bytes, more than any ROI needs" });
    expect(Date.now() - started).toBeLessThan(2_000);
  }, 30_000);

  it("a PNG bomb: image data that inflates far past its header's size is stopped while inflating", () => {
    const header = png(8, 8, new Uint16Array(64).fill(1));
    const idat = zlibSync(new Uint8Array(64 * 1024 * 1024), { level: 1 });
    // Signature and IHDR from a real 8x8 PNG, then one IDAT holding the bomb, then IEND.
    const ihdrEnd = 8 + 25;
    const out = new Uint8Array(ihdrEnd + 12 + idat.length + 12);
    out.set(header.subarray(0, ihdrEnd));
    const view = new DataView(out.buffer);
    view.setUint32(ihdrEnd, idat.length);
    out.set([0x49, 0x44, 0x41, 0x54], ihdrEnd + 4);
    out.set(idat, ihdrEnd + 8);
    view.setUint32(ihdrEnd + 12 + idat.length, 0);
    out.set([0x49, 0x45, 0x4e, 0x44], ihdrEnd + 12 + idat.length + 4);
    expect(out.length).toBeLessThan(512 * 1024);
    const started = Date.now();
    expect(refusal(out, 8, 8)).toMatchObject({ kind: "limit_exceeded", detail: expect.stringContaining("the PNG's image data inflates past") });
    expect(Date.now() - started).toBeLessThan(2_000);
  }, 30_000);

  it("deeply nested JSON is refused before it is parsed", () => {
    expect(refusal(text("[".repeat(200_000) + "]".repeat(200_000)), 8, 8)).toMatchObject({
      kind: "limit_exceeded",
      detail: "GeoJSON nests deeper than 32 levels; a FeatureCollection of MultiPolygons needs 8",
    });
  });

  it("files over the size limit, images over the pixel limit, objects over the vertex limit", () => {
    expect(refusal(new Uint8Array(MAX_IMPORT_FILE_BYTES + 1).fill(0x20), 8, 8)).toMatchObject({
      kind: "limit_exceeded",
      detail: expect.stringContaining("41,943,041 bytes"),
    });
    expect(refusal(text("[]"), 3000, 2001)).toMatchObject({ kind: "limit_exceeded", detail: expect.stringContaining("3000x2001") });
    const ring = Array.from({ length: 100_001 }, (_, i) => [4 + 3 * Math.cos(i / 20_000), 4 + 3 * Math.sin(i / 20_000)]);
    expect(refusal(text(JSON.stringify([feature([ring])])), 8, 8)).toMatchObject({
      kind: "limit_exceeded",
      detail: "feature 1 has 100001 vertices; an object may have at most 100,000",
    });
  });
});

// Issue 24: files within every count limit that asked for minutes to hours of CPU, or hundreds of
// megabytes of heap (test/fixtures/hostile-annotations.ts). Each is answered with
// the limit it passes, found before the work it would cost; `npm run bench:hostile` times them.
describe("bounded work, whatever the counts allow", () => {
  it("a comb polygon of 100,000 vertices (GeoJSON, 1.6 MB) is answered 422 before it is filled: its rows cross 200,000 edges", () => {
    expect(refusal(combGeoJson(100_000, 256, 4), 256, 4)).toEqual({
      kind: "limit_exceeded",
      status: 422,
      detail:
        "feature 1: the outlines cross the image's pixel rows more than 65,536 times, the most an import into a 256x4 image may (4 per pixel); an outline with far more edges than the pixels it covers is refused",
    });
  });

  it("the same comb as an ImageJ .roi of 100,000 subpixel vertices is answered 422 alike", () => {
    expect(refusal(combRoi(100_000, 256, 4), 256, 4)).toMatchObject({
      kind: "limit_exceeded",
      status: 422,
      detail: expect.stringMatching(/^the ROI: the outlines cross the image's pixel rows more than 65,536 times/),
    });
  });

  it("a comb of a few teeth, crossing each row a few times, still imports (one object: its largest tooth)", () => {
    expect(importAnnotation(combGeoJson(40, 256, 4), 256, 4).rois).toHaveLength(1);
  });

  it("100,000 rectangles over the whole 2560x2160 image (11 MB) are answered 422 at the first whose box passes the budget", () => {
    expect(refusal(fullImageRectangles(100_000, 2560, 2160), 2560, 2160)).toEqual({
      kind: "limit_exceeded",
      status: 422,
      detail:
        "feature 25: the objects' bounding boxes cover more than 134,217,728 pixels, counting overlaps, the most one import may (24 times this image); objects that overlap this much are not cells",
    });
    // Within the box budget they are drawn (the last one wins every pixel), and the one object left,
    // as large as the image, is refused for what training on it would cost (the next test).
    expect(refusal(fullImageRectangles(24, 2560, 2160), 2560, 2160).detail).toMatch(/^training on these objects would take 5\.2e\+10 pixel-steps/);
  });

  it("objects whose flow targets cost a training more than 1e10 pixel-steps are answered 422; the issue's ring around 93,025 small squares imports", () => {
    // The issue's label image: a 2 px ring around the border of a 2449² image, and 93,025 squares of 4x4 px inside.
    const side = 2449;
    const labels = new Uint32Array(side * side);
    for (let y = 0; y < side; y++) for (let x = 0; x < side; x++) if (x < 2 || y < 2 || x >= side - 2 || y >= side - 2) labels[y * side + x] = 1;
    let next = 2;
    for (let y = 4; y + 4 <= side - 4; y += 8)
      for (let x = 4; x + 4 <= side - 4; x += 8) {
        for (let dy = 0; dy < 4; dy++) labels.fill(next, (y + dy) * side + x, (y + dy) * side + x + 4);
        next++;
      }
    expect(next - 2).toBe(93_025);
    const tiff = encodeTiff([{ width: side, height: side, samplesPerPixel: 1, values: labels, kind: "uint32" }]);
    expect(importAnnotation(tiff, side, side).rois).toHaveLength(93_026);
    // The ring filled in: one object the size of the image, 6e6 pixels times 9,800 steps.
    const filled = new Uint32Array(side * side).fill(1);
    expect(refusal(encodeTiff([{ width: side, height: side, samplesPerPixel: 1, values: filled, kind: "uint32" }]), side, side)).toEqual({
      kind: "limit_exceeded",
      status: 422,
      detail:
        "training on these objects would take 5.9e+10 pixel-steps of heat diffusion to make their flows, past the limit of 1e+10 (each object costs its area times twice its box's width and height; the largest, 2449x2449 px, is likely not one cell)",
    });
  });

  it('7,000 repeated "features" members (98 KB) are answered 422 at the second: no repeat clears the labels or buys the budgets again', () => {
    const repeated = {
      kind: "invalid_content",
      status: 422,
      detail: 'GeoJSON: the top-level object has more than one "features" member; a repeated member is ambiguous',
    };
    const empty = repeatedFeaturesMembers(7_000, 0, 2560, 2160);
    expect(empty.length).toBeLessThan(100_000);
    expect(refusal(empty, 2560, 2160)).toEqual(repeated);
    // Each repeat holding 20 rectangles over the whole image (within the box budget once): only the
    // first member's are drawn, where resetting the budgets per repeat drew all 20,000.
    const drawn = vi.spyOn(OutlineCollector.prototype, "add");
    try {
      expect(refusal(repeatedFeaturesMembers(1_000, 20, 2560, 2160), 2560, 2160)).toEqual(repeated);
      expect(drawn).toHaveBeenCalledTimes(20);
    } finally {
      drawn.mockRestore();
    }
  });

  it("a 16-bit label TIFF of 65,535 labels, each at the top and the bottom edge, is answered 422 before the one-piece and hole passes", () => {
    expect(refusal(labelsAtTopAndBottom(2048, 2048, 65_535), 2048, 2048)).toEqual({
      kind: "limit_exceeded",
      status: 422,
      detail:
        "the objects' bounding boxes cover 135,486,697,472 pixels, counting overlaps; one import may cover at most 134,217,728 (32 times this 2048x2048 image): objects spread over much of the image, such as one label used on pixels far apart, are not cells",
    });
  });

  it("a label TIFF whose 64 LZW strips all name one run of clear codes is refused before any strip is decoded", () => {
    expect(refusal(stripsSharingLzwData(64, 64, 100_000), 64, 64)).toEqual({
      kind: "unreadable",
      status: 415,
      detail:
        "label image unreadable: TIFF corrupt: its compressed strips or tiles claim 7204800 bytes, more than the 113599-byte file holds (blocks that share their bytes)",
    });
    // One such strip alone is a valid file: the same data read once imports.
    expect(importAnnotation(stripsSharingLzwData(64, 1, 100_000), 64, 1).rois).toHaveLength(1);
  });

  it("a ZIP whose central directory names one local header 100,000 times is refused before any entry is inflated", () => {
    const zip = zipOfOverlappingEntries(100_000, "a.roi", deflateAfterEmptyBlocks(10_000, rectangleRoi(0, 0, 2, 2)), 8, 64);
    expect(refusal(zip, 8, 8)).toEqual({
      kind: "unreadable",
      status: 415,
      detail: "ZIP archive unreadable: entries a.roi and a.roi share bytes (at 0); each entry of an archive has a header and data of its own",
    });
    // The same entry listed once is a valid archive.
    expect(importAnnotation(zipOfOverlappingEntries(1, "a.roi", deflateAfterEmptyBlocks(10_000, rectangleRoi(0, 0, 2, 2)), 8, 64), 8, 8).rois).toHaveLength(1);
  });

  it("an entry whose deflate data is longer than any ROI's stored form is refused before it is inflated", () => {
    const zip = zipOfOverlappingEntries(1, "a.roi", deflateAfterEmptyBlocks(500_000, rectangleRoi(0, 0, 2, 2)), 8, 64);
    expect(refusal(zip, 8, 8)).toEqual({
      kind: "limit_exceeded",
      status: 422,
      detail: "a.roi holds 2,500,069 bytes of deflate data; an entry that inflates to at most 2,097,152 bytes needs at most 2,098,341",
    });
  });

  it("40 MiB of positions in one ring is refused for its vertices, read without being built", () => {
    const file = oneRingOfPositions(6_990_000);
    expect(file.length).toBeLessThanOrEqual(MAX_IMPORT_FILE_BYTES);
    expect(refusal(file, 64, 64)).toEqual({
      kind: "limit_exceeded",
      status: 422,
      detail: "feature 1 has 6989999 vertices; an object may have at most 100,000",
    });
  });

  it("a file at the documented limits (50 features of 100,000 vertices, 40 MB) imports", () => {
    const file = featuresAtTheVertexLimit(50, 100_000);
    expect(file.length).toBeLessThanOrEqual(MAX_IMPORT_FILE_BYTES);
    expect(importAnnotation(file, 128, 128).rois.length).toBeGreaterThan(1);
  });
});
