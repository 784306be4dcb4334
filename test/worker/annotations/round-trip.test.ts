// Exports of a model segmentation import back as the same objects: the same pixels, outlines and
// measurements, and exporting the import again gives the same file.

import { describe, expect, it } from "vitest";
import { importAnnotation } from "../../../worker/annotations/index.ts";
import type { ExportFormatName } from "../../../worker/exports/index.ts";
import { exportFrom } from "../exports/helpers/run-export.ts";
import { readAllBytes } from "../exports/helpers/streams.ts";
import { touchingCells } from "./helpers/model-segmentation.ts";

const FORMATS: ExportFormatName[] = ["rois.zip", "rois.geojson", "masks.png"];
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
