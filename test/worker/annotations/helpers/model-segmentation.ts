// A segmentation as the engine would produce it: touching cells (each pixel goes to the nearest of
// jittered seeds within a radius, so cells are convex pieces that share borders, touch diagonally,
// and touch the image's edges), labels in raster order, ROIs measured by the engine's code.

import type { ExportContext } from "../../../../schema/measurements.ts";
import { renumberInRasterOrder } from "../../../../common/geometry/label-image.ts";
import type { Roi } from "../../../../schema/roi.ts";
import type { RoiArtifactDescription } from "../../../../common/roi-artifact/writer.ts";
import { confluency, measureRois } from "../../../../common/geometry/roi-measure.ts";
import { seededRandom } from "../../../fixtures/rois-from-runs.ts";

export interface ModelSegmentation {
  width: number;
  height: number;
  labels: Uint32Array;
  rois: Roi[];
  description: RoiArtifactDescription;
  context: ExportContext;
}

export function touchingCells(width: number, height: number, spacing: number, seed: number): ModelSegmentation {
  const random = seededRandom(seed);
  const seeds: [number, number][] = [];
  for (let y = spacing / 2; y < height + spacing / 2; y += spacing) {
    for (let x = spacing / 2; x < width + spacing / 2; x += spacing) {
      seeds.push([x + (random() - 0.5) * spacing * 0.6, y + (random() - 0.5) * spacing * 0.6]);
    }
  }
  const radius = spacing * 0.62;
  const labels = new Uint32Array(width * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let best = -1,
        bestD = radius * radius;
      seeds.forEach(([sx, sy], k) => {
        const d = (x + 0.5 - sx) ** 2 + (y + 0.5 - sy) ** 2;
        if (d < bestD) {
          bestD = d;
          best = k;
        }
      });
      labels[y * width + x] = best + 1;
    }
  }
  const count = renumberInRasterOrder(labels);
  const rois = measureRois(labels, width, height, count);
  const description = { imageWidth: width, imageHeight: height, confluency: confluency(labels), modelName: "cpsam", modelVersion: "2" };
  const context: ExportContext = {
    segmentationId: "seg_roundtrip",
    segmentationSource: "model",
    modelName: "cpsam",
    imageName: "cells.tif",
    imageWidth: width,
    imageHeight: height,
    confluency: description.confluency,
  };
  return { width, height, labels, rois, description, context };
}
