// Exports of a model segmentation import back as the same objects: the same pixels, outlines and
// measurements, and exporting the import again gives the same file.

import { describe, expect, it } from "vitest";
import { importAnnotation } from "../../../worker/annotations/index.ts";
import type { ExportFormatName } from "../../../worker/exports/index.ts";
import { exportFrom } from "../exports/helpers/run-export.ts";
import { readAllBytes } from "../exports/helpers/streams.ts";
import { picture } from "./helpers/label-grid.ts";
import { touchingCells } from "./helpers/model-segmentation.ts";

const FORMATS: ExportFormatName[] = ["rois.zip", "rois.geojson", "masks.png", "masks.tif"];
const segmentation = touchingCells(160, 120, 14, 7);

describe.each(FORMATS)("%s of a model segmentation", (format) => {
  it("imports as the same objects: label image, outlines and measurements", async () => {
    const file = await exportFrom(format, segmentation.description, segmentation.rois, segmentation.context);
    const imported = importAnnotation(await readAllBytes(file.body), segmentation.width, segmentation.height);
    expect(imported.rois.length).toBe(segmentation.rois.length);
    expect(imported.labels).toEqual(segmentation.labels);
    expect(imported.rois).toEqual(segmentation.rois);
    expect(imported.confluency).toBe(segmentation.description.confluency);
  });

  it("exports again to the identical file", async () => {
    const first = await readAllBytes((await exportFrom(format, segmentation.description, segmentation.rois, segmentation.context)).body);
    const imported = importAnnotation(first, segmentation.width, segmentation.height);
    const description = { ...segmentation.description, confluency: imported.confluency };
    const again = await readAllBytes((await exportFrom(format, description, imported.rois, segmentation.context)).body);
    expect(again).toEqual(first);
  });
});

/** A polygon feature of rings given as [x, y] vertices, closed as GeoJSON wants. */
const feature = (...rings: number[][][]) => ({ type: "Feature", geometry: { type: "Polygon", coordinates: rings.map((r) => [...r, r[0]]) }, properties: {} });
const box = (x: number, y: number, w: number, h: number) => [
  [x, y],
  [x + w, y],
  [x + w, y + h],
  [x, y + h],
];

describe.each(FORMATS)("%s of an imported segmentation with holes", (format) => {
  // Two holes in one object, one of them holding another object; a slanted hole; a hole that
  // touches another hole at a corner only (two holes, as the background is 4-connected).
  const withHoles = new TextEncoder().encode(
    JSON.stringify([
      feature(box(1, 1, 12, 8), box(3, 3, 3, 3), box(8, 2, 3, 5)),
      feature(box(9, 4, 1, 1)),
      feature(box(15, 1, 9, 8), [
        [17, 3],
        [22, 4],
        [18, 7],
      ]),
      feature(box(26, 1, 7, 7), box(28, 3, 1, 1), box(29, 4, 2, 2)),
    ]),
  );
  const imported = importAnnotation(withHoles, 34, 10);
  const context = {
    segmentationId: "seg_holes",
    segmentationSource: "import" as const,
    modelName: null,
    imageName: "cells.tif",
    imageWidth: 34,
    imageHeight: 10,
    confluency: imported.confluency,
  };
  const description = { imageWidth: 34, imageHeight: 10, confluency: imported.confluency, modelName: "import", modelVersion: "1" };

  it("keeps the holes: each object is exactly its own pixels, and its area and outline say so", () => {
    expect(picture(imported.labels, 34)).toEqual([
      "..................................",
      ".aaaaaaaaaaaa..bbbbbbbbb..ccccccc.",
      ".aaaaaaa...aa..bbbbbbbbb..ccccccc.",
      ".aa...aa...aa..bb..bbbbb..cc.cccc.",
      ".aa...aa.d.aa..bb....bbb..ccc..cc.",
      ".aa...aa...aa..bbb..bbbb..ccc..cc.",
      ".aaaaaaa...aa..bbb.bbbbb..ccccccc.",
      ".aaaaaaaaaaaa..bbbbbbbbb..ccccccc.",
      ".aaaaaaaaaaaa..bbbbbbbbb..........",
      "..................................",
    ]);
    for (const roi of imported.rois) {
      const pixels = imported.labels.filter((v) => v === roi.index + 1).length;
      expect(roi.area_px).toBe(pixels);
      let twiceArea = 0;
      for (let i = 0, n = roi.polygon.length / 2; i < n; i++) {
        const j = (i + 1) % n;
        twiceArea += roi.polygon[2 * i]! * roi.polygon[2 * j + 1]! - roi.polygon[2 * j]! * roi.polygon[2 * i + 1]!;
      }
      expect(Math.abs(twiceArea) / 2).toBe(pixels);
    }
  });

  it("exports and imports back as the same objects, and exports again to the identical file", async () => {
    const first = await readAllBytes((await exportFrom(format, description, imported.rois, context)).body);
    const again = importAnnotation(first, 34, 10);
    expect(again.labels).toEqual(imported.labels);
    expect(again.rois).toEqual(imported.rois);
    expect(await readAllBytes((await exportFrom(format, description, again.rois, context)).body)).toEqual(first);
  });
});
