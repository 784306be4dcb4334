// The survey of a large image measures the cell diameter on several windows rich in foreground,
// apart from one another, and keeps their median: one region of unusual cells (or of keratin, a
// fold) among the brightest does not decide the size every block runs at.
import { describe, expect, it } from "vitest";
import { surveyImage } from "../../gpu-runner/engine/blocks/image-survey.ts";
import { inMemoryRegions } from "../../gpu-runner/engine/blocks/region-source.ts";
import { loadModelFromBytes } from "../../gpu-runner/engine/model.ts";
import { medianObjectDiameter } from "../../gpu-runner/engine/object-diameter.ts";
import { buildReferenceModel } from "../../gpu-runner/engine/reference-model.ts";
import { renderNuclei } from "../fixtures/image.ts";
import { discField } from "../fixtures/labels.ts";

describe("surveyImage", () => {
  it("estimates the diameter on three windows apart and keeps their median", async () => {
    // A 12.6 MP slide of nuclei of about 14 px, with one corner of large, densely packed blobs (a
    // fold, keratin) that is the brightest part of the image: big enough that three 1024² estimate
    // windows are a quarter of it.
    const [width, height, odd] = [4200, 3000, 1100];
    const scene = discField(width, height, 9000, 6.5, 7.5, 1);
    const blobs = discField(odd, odd, 900, 12, 14, 2);
    const next = scene.labels.reduce((max, id) => Math.max(max, id), 0);
    for (let y = 0; y < odd; y++) for (let x = 0; x < odd; x++) scene.labels[y * width + x] = blobs.labels[y * odd + x] ? next + blobs.labels[y * odd + x]! : 0;
    const { onnx, manifest } = buildReferenceModel({ diameter: 15, channels: 1, tileSize: 128 });
    const model = await loadModelFromBytes(onnx, manifest, { executionProvider: "cpu", log: () => {} });
    const survey = await surveyImage(inMemoryRegions(renderNuclei(scene)), model, { diameter: "auto" });
    const nuclei = medianObjectDiameter(discField(width, height, 9000, 6.5, 7.5, 1).labels);
    expect(survey.diameter! / nuclei).toBeGreaterThan(0.8);
    expect(survey.diameter! / nuclei).toBeLessThan(1.25);
    // The 16 sample windows of 512², and three estimate windows of 1024².
    expect(survey.sampledPixels).toBe(16 * 512 * 512 + 3 * 1024 * 1024);
  }, 60_000);
});
