import { describe, expect, it } from "vitest";
import { averagePrecision } from "../../common/scoring/average-precision.ts";
import { loadModelFromBytes, type ModelManifest } from "../../gpu-runner/engine/model.ts";
import { buildReferenceModel } from "../../gpu-runner/engine/reference-model.ts";
import { modelInput } from "../../gpu-runner/engine/model-input.ts";
import { segmentImage } from "../../gpu-runner/engine/segment.ts";
import { medianObjectDiameter } from "../../gpu-runner/engine/object-diameter.ts";
import { renderBrightfield } from "./helpers/synthetic-brightfield.ts";
import { renderNuclei } from "../fixtures/image.ts";
import { discField } from "../fixtures/labels.ts";

/** The hand-set reference network, its manifest completed by `served` (mask defaults, ...). */
async function referenceModel(diameter: number, channels = 1, served: Partial<ModelManifest> = {}) {
  const { onnx, manifest } = buildReferenceModel({ diameter, channels, tileSize: 128 });
  return loadModelFromBytes(onnx, { ...manifest, ...served }, { executionProvider: "cpu", log: () => {} });
}

describe("segmentImage", () => {
  const scene = discField(200, 160, 30, 6, 9, 21);
  const image = renderNuclei(scene);

  it("segments separated nuclei end to end, with ROIs matching the labels", async () => {
    const stages: string[] = [];
    const fractions: number[] = [];
    const result = await segmentImage(
      image,
      await referenceModel(15),
      {},
      {
        onProgress: (f, stage) => {
          fractions.push(f);
          stages.push(stage);
        },
      },
    );
    expect(averagePrecision(scene.labels, result.labels).ap[0]).toBeGreaterThanOrEqual(0.9);
    expect(result.rois.length).toBe(Math.max(...result.labels));
    let foreground = 0;
    for (const v of result.labels) if (v) foreground++;
    expect(result.confluency).toBe(foreground / result.labels.length);
    expect(result.rois.reduce((s, r) => s + r.area_px, 0)).toBe(foreground);
    expect(Object.keys(result.timings).sort()).toEqual(["diameter", "masks", "network", "normalize", "rescale", "rois"]);
    expect(result.diameter).toBe(15); // no diameter given: the model's, no rescaling
    expect(result.diameterEstimate).toBeUndefined();
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

  describe('with diameter "auto"', () => {
    // Nuclei of ~48 px for a model that expects 15 px: unrescaled, the hand-set model's flows wander
    // on each nucleus's flat top and the count is wrong; the estimate brings them to the model's size.
    const large = discField(360, 300, 12, 22, 26, 5);
    const largeImage = renderNuclei(large);
    const trueDiameter = medianObjectDiameter(large.labels);
    const trueCount = Math.max(...large.labels);

    it("estimates the diameter, reports it, and segments every nucleus once", async () => {
      const model = await referenceModel(15);
      const fractions: number[] = [];
      const result = await segmentImage(largeImage, model, { diameter: "auto" }, { onProgress: (f) => fractions.push(f) });
      expect(result.rois.length).toBe(trueCount);
      expect(fractions.every((f, i) => i === 0 || f >= fractions[i - 1]!)).toBe(true);
      expect(fractions.at(-1)).toBe(1);
      expect(averagePrecision(large.labels, result.labels).ap[0]).toBeGreaterThanOrEqual(0.9);
      // The diameter used is the first guess unless the masks disagreed with it by more than the tolerance.
      expect(result.diameter / trueDiameter).toBeGreaterThan(1 / 1.25);
      expect(result.diameter / trueDiameter).toBeLessThan(1.25);
      expect(result.diameterEstimate!.fromMasks! / trueDiameter).toBeGreaterThan(0.9);
      expect(result.diameterEstimate!.fromMasks! / trueDiameter).toBeLessThan(1.1);
      expect(result.diameterEstimate!.passes).toBeLessThanOrEqual(2);
      expect(result.diameterEstimate!.fromImage).toBeGreaterThan(0);
      expect(result.timings.diameter).toBeGreaterThan(0);
      const unscaled = await segmentImage(largeImage, model);
      expect(unscaled.rois.length).not.toBe(trueCount);
    });

    it("starts from the object size a fine-tuned model learned, instead of guessing from the image", async () => {
      const { onnx, manifest } = buildReferenceModel({ diameter: 15, channels: 1, tileSize: 128 });
      const tuned = await loadModelFromBytes(onnx, { ...manifest, trainedObjectDiameter: trueDiameter }, { executionProvider: "cpu", log: () => {} });
      const result = await segmentImage(largeImage, tuned, { diameter: "auto" });
      expect(result.diameterEstimate).toMatchObject({ fromImage: undefined, fromModel: trueDiameter, passes: 1 });
      expect(result.diameter).toBe(trueDiameter); // the masks confirmed it: no second pass
      expect(result.rois.length).toBe(trueCount);
      // A diameter the user gives still wins.
      expect((await segmentImage(largeImage, tuned, { diameter: 30 })).diameter).toBe(30);
    });

    it("runs a calibrated image at the object size the model learned in µm, and estimates only without a pixel size", async () => {
      const { onnx, manifest } = buildReferenceModel({ diameter: 15, channels: 1, tileSize: 128 });
      // The model learned fluorescence nuclei as wide as these at 0.5 µm/px.
      const objectUm = trueDiameter * 0.5;
      const calibrated = await loadModelFromBytes(
        onnx,
        { ...manifest, objectDiameterUm: { fluorescence: objectUm } },
        { executionProvider: "cpu", log: () => {} },
      );
      const atScale = await segmentImage(largeImage, calibrated, { diameter: "auto", pixelSize: { um: 0.5, from: "the file" } });
      expect(atScale.diameter).toBeCloseTo(trueDiameter, 6);
      expect(atScale.diameterEstimate).toBeUndefined();
      expect(atScale.diameterBasis).toEqual({
        source: "calibration",
        reason: `0.5 µm/px from the file: fluorescence objects of ${Number(objectUm.toPrecision(3))} µm at ${trueDiameter.toFixed(1)} px`,
      });
      expect(atScale.rois.length).toBe(trueCount);
      // No pixel size: the estimate, which says why it ran.
      const estimated = await segmentImage(largeImage, calibrated, { diameter: "auto" });
      expect(estimated.diameterBasis.source).toBe("estimated");
      expect(estimated.diameterBasis.reason).toMatch(/^estimated at \d+\.\d px \(the image states no pixel size\)$/);
      // A model that states no size for the image's modality estimates even with a pixel size.
      const unstated = await loadModelFromBytes(onnx, { ...manifest, objectDiameterUm: { histology: 5 } }, { executionProvider: "cpu", log: () => {} });
      const withoutSize = await segmentImage(largeImage, unstated, { diameter: "auto", pixelSize: { um: 0.5, from: "the file" } });
      expect(withoutSize.diameterBasis.reason).toMatch(/the model states no object size in µm for this modality/);
      // A diameter the user gives still wins, and says so.
      expect((await segmentImage(largeImage, calibrated, { diameter: 30, pixelSize: { um: 0.5, from: "the file" } })).diameterBasis).toEqual({
        source: "given",
        reason: "30 px, as requested",
      });
    });

    it("keeps nuclei already at the model's size at (nearly) scale 1, with the same quality", async () => {
      const result = await segmentImage(image, await referenceModel(15), { diameter: "auto" });
      expect(result.diameter / 15).toBeGreaterThan(0.8);
      expect(result.diameter / 15).toBeLessThan(1.25);
      expect(averagePrecision(scene.labels, result.labels).ap[0]).toBeGreaterThanOrEqual(0.9);
    });

    it("is deterministic", async () => {
      const model = await referenceModel(15);
      const [a, b] = [await segmentImage(largeImage, model, { diameter: "auto" }), await segmentImage(largeImage, model, { diameter: "auto" })];
      expect(a.diameter).toBe(b.diameter);
      expect(a.labels).toEqual(b.labels);
    });

    it("never enlarges the image more than 3x for the network, whatever the estimate", async () => {
      // Objects of ~6 px (radius 3) for a model that expects 30 px would need a 5x enlargement.
      const tiny = discField(120, 100, 25, 2.7, 3.3, 9);
      const result = await segmentImage(renderNuclei(tiny), await referenceModel(30), { diameter: "auto" });
      expect(result.diameterEstimate!.fromImage).toBeLessThan(10);
      expect(result.diameter).toBeCloseTo(10, 6);
    });

    it("finds the size of small nuclei on an unevenly lit, textured brightfield image", async () => {
      // Before counting blobs on brightfield, the first guess here was ~20x the nuclei (dsb2018
      // brightfield: ~8x), and a pass at that scale confirmed itself.
      const field = discField(400, 400, 90, 4.5, 5.5, 3);
      // Its vignetting spreads the field's brightness too much for detection; the modality is given.
      const result = await segmentImage(renderBrightfield(field), await referenceModel(15), { diameter: "auto", modality: "brightfield" });
      const fieldDiameter = medianObjectDiameter(field.labels);
      expect(result.diameterEstimate!.fromImage! / fieldDiameter).toBeGreaterThan(0.8);
      expect(result.diameterEstimate!.fromImage! / fieldDiameter).toBeLessThan(1.25);
      // The hand-set reference model's masks on this texture measure ~2x the nuclei; the passes stay
      // at that scale instead of the field's.
      expect(result.diameter / fieldDiameter).toBeLessThan(2.5);
    });

    it("measures at the model's own scale when the image's guess finds nothing, instead of giving the guess up unmeasured", async () => {
      // A broad bright swell (glass glare, a fold of keratin) that the image statistics read as the
      // objects: the guess is about 14 times the nuclei, and a pass at that scale finds none.
      const field = discField(400, 400, 10, 6, 8, 5);
      const swollen = renderNuclei(field);
      for (let y = 0; y < 400; y++) {
        for (let x = 0; x < 400; x++) swollen.data[y * 400 + x]! += 3000 * Math.exp(-((x - 200) ** 2 + (y - 200) ** 2) / (2 * 120 ** 2));
      }
      const model = await referenceModel(15);
      const fractions: number[] = [];
      const result = await segmentImage(swollen, model, { diameter: "auto" }, { onProgress: (f) => fractions.push(f) });
      expect(fractions.every((f, i) => i === 0 || f >= fractions[i - 1]!)).toBe(true);
      const nuclei = medianObjectDiameter(field.labels);
      expect(result.diameterEstimate!.fromImage! / nuclei).toBeGreaterThan(5);
      expect(result.diameterEstimate!.passes).toBeGreaterThanOrEqual(2);
      expect(result.diameterEstimate!.fromMasks! / nuclei).toBeGreaterThan(0.8);
      expect(result.diameterEstimate!.fromMasks! / nuclei).toBeLessThan(1.25);
      expect(result.labels).toEqual((await segmentImage(swollen, model, { diameter: result.diameter })).labels);
    });

    it("falls back to the model's diameter on an image without objects", async () => {
      const blank = { ...image, data: new Float32Array(image.data.length).fill(100) };
      const result = await segmentImage(blank, await referenceModel(15), { diameter: "auto" });
      expect(result.rois).toHaveLength(0);
      expect(result.diameter).toBe(15);
    });
  });

  it("feeds selected channels to the model and zero-fills missing ones", async () => {
    const twoChannel = { ...image, channels: 2, data: new Float32Array(2 * image.data.length) };
    twoChannel.data.set(image.data, image.data.length); // nuclei in channel 1, channel 0 empty
    const result = await segmentImage(twoChannel, await referenceModel(15), { channels: [1] });
    expect(averagePrecision(scene.labels, result.labels).ap[0]).toBeGreaterThanOrEqual(0.9);
    await expect(segmentImage(image, await referenceModel(15), { channels: [3] })).rejects.toThrow(/channel 3 does not exist/);
  });

  it("gives a one-channel model the mean of an RGB image's channels when none are selected, as Cellpose's grayscale mode", async () => {
    const plane = image.data.length;
    const blueNuclei = { ...image, channels: 3, data: new Float32Array(3 * plane) };
    blueNuclei.data.set(image.data, 2 * plane); // a nuclear stain rendered in blue: red and green empty
    const result = await segmentImage(blueNuclei, await referenceModel(15));
    expect(averagePrecision(scene.labels, result.labels).ap[0]).toBeGreaterThanOrEqual(0.9);
    const redOnly = await segmentImage(blueNuclei, await referenceModel(15), { channels: [0] });
    expect(redOnly.rois).toHaveLength(0);
  });

  it("gives a colour model (input modality-colour) a stained image's three channels, each inverted, and records the modality", async () => {
    const { onnx, manifest } = buildReferenceModel({ diameter: 15, channels: 3, tileSize: 128 });
    const colour = await loadModelFromBytes(onnx, { ...manifest, input: "modality-colour" }, { executionProvider: "cpu", log: () => {} });
    // H&E-like: purple nuclei (absorbing red most) on a pink field, from the bright-nuclei rendering.
    const plane = image.data.length;
    let brightest = 0;
    for (const v of image.data) brightest = Math.max(brightest, v);
    const stained = { ...image, channels: 3, bitDepth: 8, sampleFormat: "uint" as const, data: new Float32Array(3 * plane) };
    const field = [235, 175, 205],
      absorbed = [150, 110, 60];
    for (let c = 0; c < 3; c++)
      for (let i = 0; i < plane; i++) stained.data[c * plane + i] = Math.round(field[c]! - (absorbed[c]! * image.data[i]!) / brightest);
    const result = await segmentImage(stained, colour);
    expect(result.modality).toEqual({ modality: "histology", source: "detected", reason: expect.any(String) });
    expect(averagePrecision(scene.labels, result.labels).ap[0]).toBeGreaterThanOrEqual(0.9);
  });

  it("takes the model's mask defaults for the image's modality, and a request's own parameters over them", async () => {
    // A cell-probability threshold no logit reaches: with the model's default nothing is foreground.
    const strict = await referenceModel(15, 1, { maskDefaults: { fluorescence: { cellprobThreshold: 20 } } });
    const byDefault = await segmentImage(image, strict);
    expect(byDefault.modality).toEqual({ modality: "fluorescence", source: "detected", reason: expect.any(String) });
    expect(byDefault.rois).toHaveLength(0);
    const requested = await segmentImage(image, strict, { cellprobThreshold: 0 });
    expect(averagePrecision(scene.labels, requested.labels).ap[0]).toBeGreaterThanOrEqual(0.9);
    // Defaults for another modality do not apply to this image.
    const other = await referenceModel(15, 1, { maskDefaults: { brightfield: { cellprobThreshold: 20 } } });
    expect((await segmentImage(image, other)).rois.length).toBe(requested.rois.length);
  });

  it("passes an image prepared for a modality (training's) to the network unchanged, with that modality's estimate and defaults", async () => {
    // Removes the smaller discs (radius 6 to 9 px: 113 to 254 px), so the defaults show in the result.
    const model = await referenceModel(15, 1, { maskDefaults: { brightfield: { minSize: 200 } } });
    const original = renderBrightfield(scene);
    const prepared = modelInput(original, model.manifest, undefined, "brightfield").image;
    const before = prepared.data.slice();
    const served = await segmentImage(original, model, { diameter: "auto", modality: "brightfield" });
    const fromPrepared = await segmentImage(prepared, model, { diameter: "auto" }, { preparedFor: "brightfield" });
    expect(fromPrepared.modality).toEqual({ modality: "brightfield", source: "given" });
    expect(fromPrepared.diameter).toBe(served.diameter);
    expect(fromPrepared.labels).toEqual(served.labels);
    expect(served.rois.length).toBeGreaterThan(0);
    expect(served.rois.length).toBeLessThan((await segmentImage(original, model, { diameter: "auto", modality: "brightfield", minSize: 0 })).rois.length);
    // The caller's prepared image (a training cache entry) is left as it was.
    expect(prepared.data).toEqual(before);
  });

  it("takes the model's minimum object size for the modality, and a request's own over it", async () => {
    // Larger than any object of the scene: every mask is removed.
    const onlyHuge = await referenceModel(15, 1, { maskDefaults: { fluorescence: { minSize: 100_000 } } });
    expect((await segmentImage(image, onlyHuge)).rois).toHaveLength(0);
    const requested = await segmentImage(image, onlyHuge, { minSize: 15 });
    expect(averagePrecision(scene.labels, requested.labels).ap[0]).toBeGreaterThanOrEqual(0.9);
  });

  it("rejects invalid parameters with the reasons", async () => {
    const model = await referenceModel(15);
    await expect(segmentImage(image, model, { diameter: -1, niter: 1.5 })).rejects.toThrow(
      /diameter must be a positive number or "auto"; niter must be an integer/,
    );
  });
});
