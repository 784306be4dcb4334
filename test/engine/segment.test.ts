import { describe, expect, it } from "vitest";
import { averagePrecision } from "../../gpu-runner/engine/average-precision.ts";
import { loadModelFromBytes } from "../../gpu-runner/engine/model.ts";
import { buildReferenceModel } from "../../gpu-runner/engine/reference-model.ts";
import { segmentImage } from "../../gpu-runner/engine/segment.ts";
import { renderNuclei } from "./helpers/synthetic-image.ts";
import { discField } from "./helpers/synthetic-labels.ts";

async function referenceModel(diameter: number, channels = 1) {
  const { onnx, manifest } = buildReferenceModel({ diameter, channels, tileSize: 128 });
  return loadModelFromBytes(onnx, manifest, { executionProvider: "cpu", log: () => {} });
}

describe("segmentImage", () => {
  const scene = discField(200, 160, 30, 6, 9, 21);
  const image = renderNuclei(scene);

  it("segments separated nuclei end to end, with ROIs matching the labels", async () => {
    const stages: string[] = [];
    const fractions: number[] = [];
    const result = await segmentImage(image, await referenceModel(15), {}, (f, stage) => { fractions.push(f); stages.push(stage); });
    expect(averagePrecision(scene.labels, result.labels).ap[0]).toBeGreaterThanOrEqual(0.9);
    expect(result.rois.length).toBe(Math.max(...result.labels));
    let foreground = 0;
    for (const v of result.labels) if (v) foreground++;
    expect(result.confluency).toBe(foreground / result.labels.length);
    expect(result.rois.reduce((s, r) => s + r.area_px, 0)).toBe(foreground);
    expect(Object.keys(result.timings).sort()).toEqual(["masks", "network", "normalize", "rescale", "rois"]);
    expect(fractions.at(-1)).toBe(1);
    expect(fractions.every((f, i) => i === 0 || f >= fractions[i - 1]!)).toBe(true);
    expect(stages).toContain("network");
  });

  it("rescales by the requested diameter and returns labels at the image's own size", async () => {
    // The model expects 30 px cells; these are ~15 px, so the image is enlarged 2x for the network.
    const result = await segmentImage(image, await referenceModel(30), { diameter: 15 });
    expect(result.labels.length).toBe(200 * 160);
    expect(averagePrecision(scene.labels, result.labels).ap[0]).toBeGreaterThanOrEqual(0.9);
  });

  it("feeds selected channels to the model and zero-fills missing ones", async () => {
    const twoChannel = { ...image, channels: 2, data: new Float32Array(2 * image.data.length) };
    twoChannel.data.set(image.data, image.data.length); // nuclei in channel 1, channel 0 empty
    const result = await segmentImage(twoChannel, await referenceModel(15), { channels: [1] });
    expect(averagePrecision(scene.labels, result.labels).ap[0]).toBeGreaterThanOrEqual(0.9);
    await expect(segmentImage(image, await referenceModel(15), { channels: [3] })).rejects.toThrow(/channel 3 does not exist/);
  });

  it("rejects invalid parameters with the reasons", async () => {
    const model = await referenceModel(15);
    await expect(segmentImage(image, model, { diameter: -1, niter: 1.5 })).rejects.toThrow(/diameter must be a positive number; niter must be an integer/);
  });
});
