// The most objects one import may hold: a 100,000-cell segmentation exported as rois.zip (ZIP64
// end records) and as its label mask (masks.tif: masks.png stops at 65,535) imports back unchanged.

import { beforeAll, describe, expect, it } from "vitest";
import { labelsFromShapes, inRasterOrder, syntheticShapes } from "../../fixtures/rois-from-runs.ts";
import { renumberInRasterOrder } from "../../../common/geometry/label-image.ts";
import type { Roi } from "../../../schema/roi.ts";
import { confluency, measureRois } from "../../../common/geometry/roi-measure.ts";
import type { ExportContext } from "../../../schema/measurements.ts";
import { importAnnotation } from "../../../worker/annotations/index.ts";
import { MAX_IMPORT_OBJECTS } from "../../../worker/annotations/limits.ts";
import { exportFrom } from "../exports/helpers/run-export.ts";
import { readAllBytes } from "../exports/helpers/streams.ts";

const WIDTH = 2400,
  HEIGHT = 1500;
let labels: Uint32Array;
let rois: Roi[];
let coverage: number;
const context: ExportContext = {
  segmentationId: "seg_large_import",
  segmentationSource: "model",
  modelName: "cpsam",
  imageName: "plate.tif",
  imageWidth: WIDTH,
  imageHeight: HEIGHT,
  confluency: 0,
};

/** Index of the first pixel where two label images differ, -1 if none (toEqual is slow on millions). */
function firstDifference(a: Uint32Array, b: Uint32Array): number {
  if (a.length !== b.length) return 0;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

beforeAll(() => {
  labels = labelsFromShapes(WIDTH, HEIGHT, inRasterOrder(syntheticShapes(400, 250, 6, 11)));
  rois = measureRois(labels, WIDTH, HEIGHT, renumberInRasterOrder(labels));
  coverage = confluency(labels);
  context.confluency = coverage;
});

describe("a 100,000-object import", () => {
  it.each(["rois.zip", "masks.tif"] as const)(
    "%s imports back as the same 100,000 objects",
    async (format) => {
      expect(rois).toHaveLength(MAX_IMPORT_OBJECTS);
      const description = { imageWidth: WIDTH, imageHeight: HEIGHT, confluency: coverage, modelName: "cpsam", modelVersion: "2" };
      const file = await exportFrom(format, description, rois, context);
      expect(file.contentType).toBe(format === "rois.zip" ? "application/zip" : "image/tiff");
      const bytes = await readAllBytes(file.body);
      const started = performance.now();
      const imported = importAnnotation(bytes, WIDTH, HEIGHT);
      console.log(`import of ${format} (${bytes.length} bytes, ${rois.length} objects): ${Math.round(performance.now() - started)} ms`);
      expect(firstDifference(imported.labels, labels)).toBe(-1);
      expect(imported.rois.length).toBe(rois.length);
      expect(
        imported.rois.findIndex(
          (roi, i) => JSON.stringify({ ...roi, polygon: Array.from(roi.polygon) }) !== JSON.stringify({ ...rois[i], polygon: Array.from(rois[i]!.polygon) }),
        ),
      ).toBe(-1);
    },
    120_000,
  );
});
