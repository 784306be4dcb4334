// One small segmentation, written out by hand: the fixture of the golden files and round trips.
// Shapes touch the image's left, right and bottom edges and share rows, so raster order matters.

import type { ExportContext } from "../../../../schema/measurements.ts";
import type { RoiArtifactDescription } from "../../../../common/roi-artifact/writer.ts";
import { inRasterOrder, roisFromShapes } from "../../../fixtures/rois-from-runs.ts";
import type { RunShape } from "../../../fixtures/rois-from-runs.ts";

export const SMALL_WIDTH = 40;
export const SMALL_HEIGHT = 30;

const shapes: RunShape[] = [
  {
    top: 2,
    runs: [
      [3, 7],
      [2, 8],
      [2, 9],
      [3, 8],
      [4, 6],
    ],
  },
  {
    top: 1,
    runs: [
      [20, 24],
      [19, 26],
      [18, 27],
      [18, 27],
      [19, 25],
      [21, 23],
    ],
  },
  {
    top: 2,
    runs: [
      [34, 40],
      [33, 40],
      [35, 40],
    ],
  },
  {
    top: 10,
    runs: [
      [0, 3],
      [0, 5],
      [0, 4],
    ],
  },
  {
    top: 12,
    runs: [
      [10, 14],
      [8, 16],
      [7, 17],
      [7, 17],
      [8, 15],
      [9, 13],
      [10, 12],
    ],
  },
  {
    top: 12,
    runs: [
      [25, 26],
      [24, 28],
      [23, 29],
      [26, 31],
      [29, 33],
      [30, 34],
    ],
  },
  {
    top: 25,
    runs: [
      [15, 22],
      [14, 23],
      [13, 24],
      [13, 24],
      [16, 20],
    ],
  },
];

export const smallShapes = inRasterOrder(shapes);
export const smallRois = roisFromShapes(smallShapes);

export const smallDescription: RoiArtifactDescription = {
  imageWidth: SMALL_WIDTH,
  imageHeight: SMALL_HEIGHT,
  confluency: smallRois.reduce((s, r) => s + r.area_px, 0) / (SMALL_WIDTH * SMALL_HEIGHT),
  modelName: "nuclei-cpsam",
  modelVersion: "3",
};

/** Names with a comma, quotes and non-ASCII, as real microscopy file names have. */
export const smallContext: ExportContext = {
  segmentationId: "seg_01HZX4",
  segmentationSource: "model",
  modelName: "nuclei-cpsam",
  imageName: 'Zellkerne "Probe 7", Färbung µ-2.tif',
  imageWidth: SMALL_WIDTH,
  imageHeight: SMALL_HEIGHT,
  confluency: smallDescription.confluency,
};
