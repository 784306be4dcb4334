import { describe, expect, it } from "vitest";
import { averagePrecision, OverlapCounts } from "../../common/scoring/average-precision.ts";
import { minimumCostAssignment } from "../../common/scoring/assignment.ts";
import { emptyLabels, mixedScene, paintRect } from "../fixtures/labels.ts";

describe("averagePrecision (Cellpose's TP / (TP + FP + FN))", () => {
  it("scores identical segmentations 1 at every threshold, whatever the label values", () => {
    const scene = mixedScene();
    const relabelled = scene.labels.map((v) => (v === 0 ? 0 : 50 - v));
    expect(averagePrecision(scene.labels, relabelled)).toEqual({ ap: [1, 1, 1], tp: [9, 9, 9], fp: [0, 0, 0], fn: [0, 0, 0] });
  });

  it("counts a match only when IoU reaches the threshold", () => {
    // Truth: a 10x10 square. Prediction: the same square shifted 2 px right: IoU = 80 / 120 = 0.667.
    const truth = emptyLabels(20, 12);
    paintRect(truth, 2, 1, 10, 10, 1);
    const predicted = emptyLabels(20, 12);
    paintRect(predicted, 4, 1, 10, 10, 1);
    const result = averagePrecision(truth.labels, predicted.labels, [0.5, 0.75]);
    expect(result).toEqual({ ap: [1, 0], tp: [1, 0], fp: [0, 1], fn: [0, 1] });
  });

  it("counts missed and spurious objects", () => {
    const truth = emptyLabels(30, 10);
    paintRect(truth, 0, 0, 5, 5, 1);
    paintRect(truth, 10, 0, 5, 5, 2);
    const predicted = emptyLabels(30, 10);
    paintRect(predicted, 0, 0, 5, 5, 1);
    paintRect(predicted, 20, 0, 5, 5, 2);
    paintRect(predicted, 20, 6, 3, 3, 3);
    expect(averagePrecision(truth.labels, predicted.labels, [0.5])).toEqual({ ap: [1 / 4], tp: [1], fp: [2], fn: [1] });
  });

  it("matches one-to-one at low thresholds, where greedy matching could double count", () => {
    // One truth square split into two predicted halves: both halves have IoU 0.5 with it.
    const truth = emptyLabels(10, 10);
    paintRect(truth, 0, 0, 10, 10, 1);
    const predicted = emptyLabels(10, 10);
    paintRect(predicted, 0, 0, 5, 10, 1);
    paintRect(predicted, 5, 0, 5, 10, 2);
    expect(averagePrecision(truth.labels, predicted.labels, [0.3, 0.5, 0.6])).toEqual({ ap: [0.5, 0.5, 0], tp: [1, 1, 0], fp: [1, 1, 2], fn: [0, 0, 1] });
  });

  it("scores an image with nothing to find and nothing found as 1", () => {
    expect(averagePrecision(new Uint32Array(16), new Uint32Array(16)).ap).toEqual([1, 1, 1]);
  });
});

describe("OverlapCounts, gathered row by row", () => {
  it("gives what the whole label images give, never holding them whole", () => {
    const scene = mixedScene();
    const predicted = scene.labels.map((v, i) => (v === 0 || i % 7 === 0 ? 0 : v)); // holes in every object
    const counts = new OverlapCounts(Math.max(...scene.labels), Math.max(...predicted));
    for (let y = 0; y < scene.height; y++) {
      const row = (labels: Uint32Array) => labels.subarray(y * scene.width, (y + 1) * scene.width);
      counts.addRow(row(scene.labels), row(predicted));
    }
    expect(counts.averagePrecision([0.5, 0.75, 0.9])).toEqual(averagePrecision(scene.labels, predicted));
  });

  it("refuses a label above the largest it was given", () => {
    const counts = new OverlapCounts(1, 1);
    expect(() => counts.addRow(Uint32Array.of(2), Uint32Array.of(0))).toThrow(/label 2 is above the largest given/);
  });
});

describe("minimumCostAssignment", () => {
  it("finds the optimal assignment of a square and a rectangular matrix", () => {
    const square = Float64Array.from([4, 1, 3, 2, 0, 5, 3, 2, 2]);
    expect(Array.from(minimumCostAssignment(square, 3, 3))).toEqual([1, 0, 2]); // cost 1 + 2 + 2 = 5
    const tall = Float64Array.from([5, 1, 2, 9, 1, 7]); // 3 rows, 2 columns
    expect(Array.from(minimumCostAssignment(tall, 3, 2))).toEqual([1, -1, 0]); // 1 + 1 beats every other pair
  });
});
