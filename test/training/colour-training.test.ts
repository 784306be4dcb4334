// Training a colour model (3 channels made for the modality, manifest input "modality-colour"):
// stained images are read as the engine makes them, prepared and cropped with their three channels,
// trained on, and fine-tuned by the runner's entry point into a model whose manifest says colour,
// from a colour base or from a one-channel base widened for stained pairs (fine-tune-recipe.ts).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encode } from "fast-png";
import { afterAll, describe, expect, it } from "vitest";
import type { DecodedImage } from "../../common/decode/index.ts";
import { loadModelFromBytes } from "../../gpu-runner/engine/model.ts";
import { parameterLayout } from "../../gpu-runner/network/parameter-layout.ts";
import { segmentImage } from "../../gpu-runner/engine/segment.ts";
import { weightsFromModel } from "../../gpu-runner/network/weights-from-model.ts";
import { CELLPOSE_AUGMENTATION, MICROSCOPE_AUGMENTATION } from "../../gpu-runner/training/augment.ts";
import { fineTune } from "../../gpu-runner/training/fine-tune.ts";
import { fineTuneRecipe, STAINED_LEARNING_RATE, STAINED_MASK_DEFAULTS } from "../../gpu-runner/training/fine-tune-recipe.ts";
import { initialParameters } from "../../gpu-runner/training/initial-parameters.ts";
import { readLabelledDirectory } from "../../gpu-runner/training/labelled-images.ts";
import { exportModel } from "../../gpu-runner/training/model-export.ts";
import { COLOUR } from "../../gpu-runner/training/network-input.ts";
import { prepareImages } from "../../gpu-runner/training/prepare-image.ts";
import { preparedImageBytes, preparedInMemory } from "../../gpu-runner/training/prepared-image-cache.ts";
import { defaultTrainingConfig, FINE_TUNE_PEAK_LEARNING_RATE } from "../../gpu-runner/training/training-config.ts";
import { freshTrainingState, Trainer } from "../../gpu-runner/training/trainer.ts";
import { preparedSyntheticNuclei, syntheticNuclei } from "./synthetic-nuclei.ts";
import { TINY_NETWORK } from "./tiny-network.ts";

const root = mkdtempSync(join(tmpdir(), "colour-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const SIZE = 64;
// H&E-like: a pink field whose nuclei absorb red most and blue least (purple).
const FIELD = [235, 175, 205],
  ABSORBED = [150, 110, 60];

/** A stained RGB rendering of synthetic nuclei, planar, 8-bit values. */
function stainedNuclei(seed: number): { image: DecodedImage; labels: Uint32Array } {
  const { image, labels } = syntheticNuclei(SIZE, SIZE, 6, seed);
  const plane = SIZE * SIZE;
  const data = new Float32Array(3 * plane);
  for (let c = 0; c < 3; c++)
    for (let i = 0; i < plane; i++) data[c * plane + i] = Math.max(0, Math.min(255, Math.round(FIELD[c]! - ABSORBED[c]! * image[i]!)));
  return { image: { width: SIZE, height: SIZE, channels: 3, bitDepth: 8, sampleFormat: "uint", data }, labels };
}

function writeStainedSet(count: number): string {
  const dir = join(root, "stained");
  mkdirSync(join(dir, "images"), { recursive: true });
  mkdirSync(join(dir, "labels"), { recursive: true });
  for (let n = 0; n < count; n++) {
    const { image, labels } = stainedNuclei(60 + n);
    const plane = SIZE * SIZE;
    const interleaved = new Uint8Array(3 * plane);
    for (let i = 0; i < plane; i++) for (let c = 0; c < 3; c++) interleaved[3 * i + c] = image.data[c * plane + i]!;
    writeFileSync(join(dir, "images", `s${n}.png`), encode({ width: SIZE, height: SIZE, data: interleaved, depth: 8, channels: 3 }));
    writeFileSync(join(dir, "labels", `s${n}.png`), encode({ width: SIZE, height: SIZE, data: Uint16Array.from(labels), depth: 16, channels: 1 }));
  }
  return dir;
}

const colourNetwork = { ...TINY_NETWORK, inputChannels: 3 };

describe("a colour model's training data", () => {
  it("reads stained images as the engine feeds a colour model: three planes, each inverted, nuclei bright in all", () => {
    const pairs = readLabelledDirectory(writeStainedSet(2), COLOUR);
    const plane = SIZE * SIZE;
    for (const pair of pairs) {
      expect(pair.modality).toBe("histology");
      expect(pair.channels).toBe(3);
      expect(pair.image.length).toBe(3 * plane);
      for (let c = 0; c < 3; c++) {
        let inside = 0,
          outside = 0,
          nInside = 0;
        pair.labels.forEach((label, i) => {
          if (label) {
            inside += pair.image[c * plane + i]!;
            nInside++;
          } else outside += pair.image[c * plane + i]!;
        });
        expect(inside / nInside, `${pair.id} channel ${c}`).toBeGreaterThan(outside / (plane - nInside) + 0.5 * ABSORBED[c]!);
      }
    }
    // The one-channel reading of the same files is one plane, as before.
    expect(readLabelledDirectory(join(root, "stained"))[0]!.channels).toBe(1);
  });

  it("is prepared with its three channels, each normalised, and counted as such against the memory budget", () => {
    const [prepared] = prepareImages(readLabelledDirectory(join(root, "stained"), COLOUR).slice(0, 1), 12);
    expect(prepared!.channels).toBe(3);
    expect(prepared!.image.length).toBe(3 * SIZE * SIZE);
    expect(prepared!.image.byteLength + prepared!.flows.byteLength + prepared!.foreground.byteLength).toBe(preparedImageBytes(SIZE, SIZE, 3));
  });
});

describe("training a colour network", () => {
  it("runs a train step on 3-channel crops with the microscope augmentation, and its loss is finite", async () => {
    const prepared = prepareImages(readLabelledDirectory(writeStainedSet(2), COLOUR), 12);
    const config = defaultTrainingConfig(4, { network: colourNetwork, cropSize: 32, batchSize: 2, modelDiameter: 12, augmentation: MICROSCOPE_AUGMENTATION });
    const trainer = await Trainer.create(freshTrainingState(config), preparedInMemory(prepared), { intraOpNumThreads: 1 });
    for (let step = 0; step < 2; step++) expect(Number.isFinite((await trainer.step()).loss)).toBe(true);
    expect(trainer.state.step).toBe(2);
  });

  it("refuses images prepared with another channel count than the network reads", async () => {
    const config = defaultTrainingConfig(4, { network: colourNetwork, cropSize: 32, batchSize: 1, modelDiameter: 12 });
    const trainer = await Trainer.create(freshTrainingState(config), preparedInMemory([preparedSyntheticNuclei("gray/0", SIZE, 1)]), { intraOpNumThreads: 1 });
    await expect(trainer.step()).rejects.toThrow(/gray\/0 was prepared with 1 channels, the network reads 3/);
  });

  const untrainedColourModel = (name: string) =>
    exportModel(
      defaultTrainingConfig(10, { network: colourNetwork, cropSize: 32, modelDiameter: 12 }),
      initialParameters(parameterLayout(colourNetwork), 5),
      name,
      "0",
      { source: "test" },
    );

  it("fine-tunes a colour model into a servable colour model (channels 3, input modality-colour)", async () => {
    const base = untrainedColourModel("tiny-colour");
    expect(base.manifest).toMatchObject({ channels: 3, input: "modality-colour" });
    const result = await fineTune({
      base,
      pairs: [1, 2, 3].map((seed) => () => stainedNuclei(seed)),
      budget: { steps: 2 },
      batchSize: 2,
      threads: 1,
      validations: 1,
    });
    expect(result.steps).toBe(2);
    // Stained pairs: the training regions and their slide variants, each drawn from as an image of its own.
    expect(result.recipe).toBe("stained: stain variants, microscope augmentation");
    expect(result.memory.peakBytes).toBeGreaterThan(0);
    expect(result.memory.peakBytes).toBeLessThanOrEqual(6 * preparedImageBytes(SIZE, SIZE, 3));
    expect(result.manifest).toMatchObject({ name: "tiny-colour-finetuned", channels: 3, input: "modality-colour" });
    expect(result.validation.apBefore).toBeGreaterThanOrEqual(0);
    const served = await loadModelFromBytes(result.onnx, result.manifest, { executionProvider: "cpu", log: () => {} });
    expect(served.manifest.input).toBe("modality-colour");
  });

  it("refuses to fine-tune a model whose manifest does not say what its network reads", async () => {
    const base = untrainedColourModel("plain-rgb");
    const withoutInput = { ...base.manifest };
    delete withoutInput.input;
    await expect(fineTune({ base: { onnx: base.onnx, manifest: withoutInput }, pairs: [() => stainedNuclei(1)], budget: { steps: 1 } })).rejects.toThrow(
      /plain-rgb's manifest \(channels 3\) does not describe its network, which reads 3 channel\(s\) \(modality-colour\)/,
    );
  });
});

describe("fine-tuning a one-channel base on stained pairs", () => {
  const oneChannel = { ...TINY_NETWORK, inputChannels: 1 };
  const base = exportModel(
    defaultTrainingConfig(10, { network: oneChannel, cropSize: 32, modelDiameter: 12 }),
    initialParameters(parameterLayout(oneChannel), 5),
    "tiny",
    "0",
    { source: "test" },
  );
  const stainedPairs = (count: number) => Array.from({ length: count }, (_, k) => () => stainedNuclei(k + 1));

  it("trains a colour version of the base on the pairs and their slide variants, which the engine serves", async () => {
    const result = await fineTune({ base, pairs: stainedPairs(3), budget: { steps: 4 }, batchSize: 4, threads: 1, holdOut: false });
    expect(result.recipe).toBe("stained: colour input, stain variants, microscope augmentation");
    // A base whose manifest names no rate trains at the stained recipe's.
    expect(result.learningRate).toBe(STAINED_LEARNING_RATE);
    expect(result.manifest).toMatchObject({ name: "tiny-finetuned", channels: 3, input: "modality-colour", tileSize: 32, diameter: 12 });
    expect(result.manifest.provenance.source).toMatch(/its one-channel first layer spread over three colour planes/);
    expect(weightsFromModel(result.onnx).network.inputChannels).toBe(3);
    // Served with cpsam-histology's mask defaults on histology, the recipe's model's own.
    expect(result.manifest.maskDefaults).toEqual(STAINED_MASK_DEFAULTS);
    // 16 crops from 3 images read in colour and 6 variants: some variants were drawn (nothing is dropped within the default budget).
    expect(result.memory.preparations).toBeGreaterThan(3);
    expect(result.memory.preparations).toBeLessThanOrEqual(9);
    expect(result.memory.peakBytes).toBe(result.memory.preparations * preparedImageBytes(SIZE, SIZE, 3));
    const served = await loadModelFromBytes(result.onnx, result.manifest, { executionProvider: "cpu", log: () => {} });
    const segmented = await segmentImage(stainedNuclei(9).image, served, { diameter: 12 });
    expect(segmented.labels.length).toBe(SIZE * SIZE);
    await served.session.release();
  });

  it("scores the base as served, reading one channel, and returns it unchanged when the colour model does not beat it", async () => {
    // The untrained tiny base finds no nuclei, nor does its colour version after two steps: no gain.
    const result = await fineTune({ base, pairs: stainedPairs(5), budget: { steps: 2 }, batchSize: 2, threads: 1, validations: 1 });
    expect(result.recipe).toBe("stained: colour input, stain variants, microscope augmentation");
    expect(result.validation).toMatchObject({ apBefore: 0, chosenStep: 0, heldOutBy: "held_out_regions", heldOut: 5 });
    expect(result.validation.evidence?.verdict).toBe("no_gain");
    expect(result.onnx).toBe(base.onnx);
    expect(result.manifest).toEqual({ ...base.manifest, name: "tiny-finetuned", version: result.manifest.version, provenance: result.manifest.provenance });
    expect(result.manifest.provenance.source).toMatch(/weights of step 0 of 2/);
  });

  it("keeps the standard recipe and one channel on fluorescence pairs", async () => {
    const fluorescence = (seed: number) => () => {
      const { image, labels } = syntheticNuclei(SIZE, SIZE, 6, seed);
      return { image: { width: SIZE, height: SIZE, channels: 1, bitDepth: 32, sampleFormat: "float", data: image } satisfies DecodedImage, labels };
    };
    const result = await fineTune({ base, pairs: [1, 2, 3].map(fluorescence), budget: { steps: 2 }, batchSize: 2, threads: 1, holdOut: false });
    expect(result.recipe).toBe("standard: Cellpose augmentation");
    expect(result.learningRate).toBe(FINE_TUNE_PEAK_LEARNING_RATE);
    expect(result.manifest.channels).toBe(1);
    expect(result.manifest.input).toBeUndefined();
    expect(result.memory.preparations).toBe(3);
  });
});

describe("fineTuneRecipe", () => {
  it("serves the stained recipe's models with cpsam-histology's own mask defaults", () => {
    const manifest = JSON.parse(readFileSync("gpu-runner/models/cpsam-histology/cpsam-histology.json", "utf8"));
    expect(STAINED_MASK_DEFAULTS).toEqual(manifest.maskDefaults);
  });

  it("gives the stained recipe when most pairs are stained histology, widening only a one-channel base", () => {
    expect(fineTuneRecipe(["histology", "histology", "fluorescence"], 1)).toMatchObject({
      inputChannels: 3,
      slideVariants: 2,
      augmentation: { ...MICROSCOPE_AUGMENTATION, zoomRange: 0.8 },
      learningRate: STAINED_LEARNING_RATE,
    });
    expect(fineTuneRecipe(["histology"], 3)).toMatchObject({
      name: "stained: stain variants, microscope augmentation",
      inputChannels: 3,
      maskDefaults: { histology: { cellprobThreshold: 0, flowThreshold: 0.4, minSize: 30 } },
    });
    expect(fineTuneRecipe(["histology", "brightfield"], 1)).toEqual({
      name: "standard: Cellpose augmentation",
      inputChannels: 1,
      slideVariants: 0,
      augmentation: CELLPOSE_AUGMENTATION,
    });
  });
});
