// The runner's fine-tuning entry point: base model + (image, labels) pairs + budget in, a servable
// model and held-out AP before/after out; bad requests are refused clearly.
import { describe, expect, it } from "vitest";
import type { DecodedImage } from "../../common/decode/index.ts";
import { loadModelFromBytes } from "../../gpu-runner/engine/model.ts";
import { parameterLayout } from "../../gpu-runner/network/parameter-layout.ts";
import { weightsFromModel } from "../../gpu-runner/network/weights-from-model.ts";
import { fineTune } from "../../gpu-runner/training/fine-tune.ts";
import { initialParameters } from "../../gpu-runner/training/initial-parameters.ts";
import { exportModel } from "../../gpu-runner/training/model-export.ts";
import { medianObjectDiameter } from "../../gpu-runner/engine/object-diameter.ts";
import { defaultTrainingConfig, FINE_TUNE_PEAK_LEARNING_RATE } from "../../gpu-runner/training/training-config.ts";
import { syntheticNuclei } from "./synthetic-nuclei.ts";
import { TINY_NETWORK } from "./tiny-network.ts";

const network = { ...TINY_NETWORK, inputChannels: 1 };
const baseConfig = defaultTrainingConfig(10, { network, cropSize: 32, modelDiameter: 12 });
const baseParams = initialParameters(parameterLayout(network), 5);
const base = exportModel(baseConfig, baseParams, "tiny", "0", { source: "test" });

function pair(seed: number): () => { image: DecodedImage; labels: Uint32Array } {
  const { image, labels } = syntheticNuclei(64, 64, 6, seed);
  return () => ({ image: { width: 64, height: 64, channels: 1, bitDepth: 32, sampleFormat: "float", data: image }, labels });
}

describe("fineTune", () => {
  it("returns a servable model and AP before, after and at the last step on regions of the images held out from training", async () => {
    const steps: number[] = [];
    const result = await fineTune({
      base,
      pairs: [pair(1), pair(2), pair(3), pair(4), pair(5)],
      budget: { steps: 4 },
      batchSize: 2,
      threads: 1,
      onProgress: (p) => steps.push(p.step),
    });
    expect(steps).toEqual([1, 2, 3, 4]);
    expect(result.steps).toBe(4);
    // 75 objects: two folds of about 40, one is enough; each of the five images gives it a band.
    expect(result.validation).toMatchObject({ heldOutBy: "held_out_regions", folds: 2, heldOut: 5, judgedImages: 5, onTrainingImage: false });
    expect(result.validation.evidence!.objects).toBeGreaterThanOrEqual(20);
    for (const ap of [
      result.validation.apBefore,
      result.validation.apAfter,
      result.validation.apLastStep,
      result.validation.ap75Before,
      result.validation.ap75After,
    ]) {
      expect(ap).toBeGreaterThanOrEqual(0);
      expect(ap).toBeLessThanOrEqual(1);
    }
    expect(result.manifest).toMatchObject({ name: "tiny-finetuned", channels: 1, tileSize: 32, diameter: 12 });
    expect(result.recipe).toBe("standard: Cellpose augmentation");
    // The training objects' size is given to the model only where it beats the image's own estimate
    // on the held-out pairs; this untrained network finds nothing either way, and a tie keeps the estimate.
    expect(result.manifest.trainedObjectDiameter).toBeUndefined();
    expect(result.validation.note).toMatch(/\. Segmenting without a diameter, the new model estimates each image's object size itself, as its base does$/);
    const served = await loadModelFromBytes(result.onnx, result.manifest, { executionProvider: "cpu", log: () => {} });
    expect(served.inputName).toBe("input");
  });

  it("runs its train steps where the runner segments: on the CPU by default, on auto the provider inference chooses, and says which", async () => {
    const request = { base, pairs: [pair(1), pair(2)], budget: { steps: 1 }, batchSize: 2, threads: 1, holdOut: false };
    expect((await fineTune(request)).executionProvider).toBe("cpu");
    const inference = await loadModelFromBytes(base.onnx, base.manifest, { executionProvider: "auto", log: () => {} });
    const trained = await fineTune({ ...request, executionProvider: "auto" });
    expect(trained.executionProvider).toBe(inference.executionProvider);
    expect(trained.steps).toBe(1);
  });

  it("fine-tunes at the base manifest's learning rate, which the result keeps for a later fine-tuning; a request's own rate wins", async () => {
    const request = { pairs: [pair(1), pair(2)], budget: { steps: 1 }, batchSize: 2, threads: 1, holdOut: false };
    expect((await fineTune({ ...request, base })).learningRate).toBe(FINE_TUNE_PEAK_LEARNING_RATE);
    const slowBase = { onnx: base.onnx, manifest: { ...base.manifest, fineTuneLearningRate: 1e-4 } };
    const slow = await fineTune({ ...request, base: slowBase });
    expect(slow.learningRate).toBe(1e-4);
    expect(slow.manifest.fineTuneLearningRate).toBe(1e-4);
    expect((await fineTune({ ...request, base: slowBase, learningRate: 3e-4 })).learningRate).toBe(3e-4);
  });

  it("never returns weights that do not beat the base on the held-out pairs by more than noise: the base comes back unchanged, with what was seen", async () => {
    // The untrained tiny base finds no nuclei (AP 0) and four small steps do not change that: no gain, the base is kept.
    const result = await fineTune({
      base,
      pairs: [pair(1), pair(2), pair(3), pair(4), pair(5)],
      budget: { steps: 4 },
      batchSize: 2,
      threads: 1,
      validations: 2,
    });
    expect(result.validation).toMatchObject({ apBefore: 0, apAfter: 0, apLastStep: 0, ap75Before: 0, ap75After: 0, chosenStep: 0, heldOut: 5 });
    // The evidence weighed: the held-out bands' objects in tiles of a few diameters, and the best validated step against the base.
    const objects = result.validation.evidence!.objects;
    const total = [1, 2, 3, 4, 5].reduce((n, seed) => n + new Set(pair(seed)().labels.filter((id) => id > 0)).size, 0);
    expect(objects).toBeGreaterThanOrEqual(20);
    expect(objects).toBeLessThan(total);
    expect(result.validation.evidence).toMatchObject({ images: 5, apBase: 0, apFineTuned: 0, gain: 0, verdict: "no_gain" });
    expect(result.validation.evidence!.tiles).toBeGreaterThan(1);
    expect([2, 4]).toContain(result.validation.candidateStep);
    expect(result.validation.note).toMatch(
      new RegExp(
        `^on 5 held-out regions of the images \\(${objects} objects, \\d+ tiles\\) AP@0\\.5 stayed at 0\\.000.*: no gain, the base weights are returned unchanged\\.`,
      ),
    );
    expect(weightsFromModel(result.onnx).params).toEqual(weightsFromModel(base.onnx).params);
    expect(result.manifest.provenance.source).toMatch(/weights of step 0 of 4/);
    // Weights the verdict does not keep are not trained further.
    expect(result.validation.thenOnEverything).toBe(0);
    expect(result.steps).toBe(4);
  });

  it("trains the weights its verdict keeps on every region afterwards, the judged bands too, a quarter of the judged run's steps more", async () => {
    // 300 steps at a high rate teach the tiny network to find most of the synthetic nuclei (AP@0.5 about 0.85 from 0).
    const result = await fineTune({
      base,
      pairs: [pair(1), pair(2), pair(3), pair(4), pair(5)],
      budget: { steps: 300 },
      learningRate: 0.03,
      batchSize: 4,
      threads: 1,
      validations: 2,
    });
    const { evidence, candidateStep, chosenStep, thenOnEverything, note } = result.validation;
    expect(evidence).toMatchObject({ apBase: 0, verdict: "gain" });
    expect(evidence!.apFineTuned).toBeGreaterThan(0.5);
    expect(thenOnEverything).toBe(75);
    expect(result.steps).toBe(375);
    expect(chosenStep).toBe(candidateStep + 75);
    expect(note).toMatch(/: a gain, the fine-tuned weights, trained 75 steps more on every region \(the held-out ones too\), are returned\./);
    expect(result.manifest.provenance.source).toMatch(new RegExp(`weights of step ${candidateStep} of 300, then 75 steps on every region, on 5 images$`));
  });

  it("is repeatable: the same annotations and seed give the same split, verdict and weights, in whatever order they are listed; another seed draws anew", async () => {
    const pairs = [pair(1), pair(2), pair(3), pair(4), pair(5)];
    const judged = (seed: number, listed = pairs) => fineTune({ base, pairs: listed, budget: { steps: 3 }, batchSize: 2, threads: 1, validations: 1, seed });
    const [first, again] = [await judged(5), await judged(5)];
    expect(again.validation).toEqual(first.validation);
    expect(Buffer.from(again.onnx).equals(Buffer.from(first.onnx))).toBe(true);
    // The worker lists a training's images by id, drawn at upload: the same images uploaded again come in another order.
    const reordered = await judged(5, [pairs[3]!, pairs[0]!, pairs[4]!, pairs[2]!, pairs[1]!]);
    expect(reordered.validation).toEqual(first.validation);
    expect(Buffer.from(reordered.onnx).equals(Buffer.from(first.onnx))).toBe(true);
    // Unjudged runs return the last step's weights, which show the training's own draws (crops,
    // flips, order): the same for the same seed, others for another (the split's seeding is
    // region-split.test.ts's).
    const trained = async (seed: number, listed = pairs) =>
      weightsFromModel((await fineTune({ base, pairs: listed, budget: { steps: 3 }, batchSize: 2, threads: 1, holdOut: false, seed })).onnx).params;
    const [five, fiveAgain, six] = [await trained(5), await trained(5), await trained(6)];
    expect(fiveAgain).toEqual(five);
    expect(await trained(5, [...pairs].reverse())).toEqual(five);
    expect(six).not.toEqual(five);
  });

  it("with only a time budget, plans its steps to fill the budget and stops by its end", async () => {
    const result = await fineTune({ base, pairs: [pair(1), pair(2), pair(3)], budget: { seconds: 2 }, batchSize: 2, threads: 1, validations: 2 });
    expect(result.steps).toBeGreaterThan(4); // more than the steps timed to plan the rest
    expect(result.seconds).toBeGreaterThan(1); // the schedule was not cut short...
    expect(result.seconds).toBeLessThan(4); // ...nor run past the budget by more than a step and a validation
  });

  it("with fewer objects than the guard needs, scores base and result on the images trained on, says so and how many objects to add", async () => {
    // One image of 14 nuclei: under the 20 the guard needs.
    const result = await fineTune({ base, pairs: [pair(1)], budget: { steps: 2 }, batchSize: 2, threads: 1, validations: 1 });
    expect(result.validation).toMatchObject({ heldOut: 1, heldOutBy: "training_images", onTrainingImage: true, apBefore: 0, ap75Before: 0 });
    expect(result.validation.ap75After).toBeLessThanOrEqual(result.validation.apAfter!);
    expect(result.validation.note).toMatch(/^on the images trained on \(14 objects, \d+ tiles; too few objects to hold any out\)/);
    expect(result.validation.note).toMatch(
      /too few to tell: the images hold 14 annotated objects, under the 20 needed to judge a model; annotate 6 more and train again/,
    );
    expect(result.validation.evidence).toMatchObject({ images: 1, verdict: "too_few_to_tell" });
    expect(weightsFromModel(result.onnx).params).toEqual(weightsFromModel(base.onnx).params);
  });

  it("judges one image's own regions when it alone holds enough objects", async () => {
    const { image, labels } = syntheticNuclei(192, 128, 6, 7);
    const one = () => ({ image: { width: 192, height: 128, channels: 1, bitDepth: 32, sampleFormat: "float" as const, data: image }, labels });
    const result = await fineTune({ base, pairs: [one], budget: { steps: 2 }, batchSize: 2, threads: 1, validations: 1 });
    expect(result.validation).toMatchObject({ heldOutBy: "held_out_regions", heldOut: 1, judgedImages: 1, onTrainingImage: false });
    expect(result.validation.evidence!.objects).toBeGreaterThanOrEqual(20);
  });

  it("with a small set, holds its folds out in turn so every object is judged once, and returns weights trained on all of them", async () => {
    // 29 objects in two images: two folds of about 15, each under the guard's 20.
    const fractions: number[] = [];
    const result = await fineTune({
      base,
      pairs: [pair(1), pair(2)],
      budget: { steps: 3 },
      batchSize: 2,
      threads: 1,
      holdOut: true,
      onProgress: (p) => fractions.push(p.fraction),
    });
    expect(result.validation).toMatchObject({ heldOutBy: "rotated_regions", folds: 2, heldOut: 4, judgedImages: 2 });
    // Each object is judged once (one crossing the cut between two bands counts in both).
    expect(result.validation.evidence!.objects).toBeGreaterThanOrEqual(29);
    expect(result.validation.note).toMatch(/^on every object once, 2 folds of regions held out in turn \(4 regions, \d+ objects, \d+ tiles\)/);
    // Two folds and the last run on everything, three steps each; progress runs across all three.
    expect(fractions).toHaveLength(9);
    expect(fractions.every((f, i) => i === 0 || f >= fractions[i - 1]!)).toBe(true);
    expect(fractions.at(-1)).toBe(1);
    expect(result.steps).toBe(3);
  });

  it("without held-out pairs returns the weights of the last step and says they are unvalidated", async () => {
    const result = await fineTune({ base, pairs: [pair(1), pair(2)], budget: { steps: 3 }, batchSize: 2, threads: 1, holdOut: false });
    expect(result.validation).toMatchObject({ apBefore: undefined, apAfter: undefined, heldOut: 0, evidence: undefined });
    expect(result.validation.note).toBe("nothing held out (as requested): the weights after step 3 are returned unvalidated");
    expect(weightsFromModel(result.onnx).params).not.toEqual(baseParams);
    // Nothing to check it on: the model starts "auto" from its training objects' size, their median over the images.
    const sizes = [1, 2].map((seed) => medianObjectDiameter(pair(seed)().labels));
    expect(result.manifest.trainedObjectDiameter).toBeCloseTo((sizes[0]! + sizes[1]!) / 2, 9);
  });

  it("refuses requests without a budget, without pairs, or with mismatched labels", async () => {
    await expect(fineTune({ base, pairs: [pair(1)], budget: {} })).rejects.toThrow(/budget/);
    await expect(fineTune({ base, pairs: [], budget: { steps: 1 } })).rejects.toThrow(/at least one/);
    const bad = pair(1)();
    await expect(fineTune({ base, pairs: [() => ({ image: bad.image, labels: bad.labels.subarray(1) })], budget: { steps: 1 } })).rejects.toThrow(
      /labels hold/,
    );
  });

  it("refuses a base model this trainer did not export", async () => {
    const foreign = new Uint8Array([8, 8, 18, 3, 102, 111, 111]);
    await expect(fineTune({ base: { onnx: foreign, manifest: base.manifest }, pairs: [pair(1)], budget: { steps: 1 } })).rejects.toThrow();
  });
});
