// Training images are held within a memory budget: prepared when drawn, the least recently used
// dropped past the budget and prepared again when drawn again; fine-tuning a job whose images need
// more than the budget still trains, holding no more than the budget.
import { describe, expect, it } from "vitest";
import type { DecodedImage } from "../../common/decode/index.ts";
import { InputError } from "../../gpu-runner/engine/faults.ts";
import { parameterLayout } from "../../gpu-runner/network/parameter-layout.ts";
import { fineTune } from "../../gpu-runner/training/fine-tune.ts";
import { initialParameters } from "../../gpu-runner/training/initial-parameters.ts";
import { exportModel } from "../../gpu-runner/training/model-export.ts";
import { SeededRandom } from "../../gpu-runner/training/random.ts";
import { PreparedImageCache, preparedImageBytes } from "../../gpu-runner/training/prepared-image-cache.ts";
import { defaultTrainingConfig } from "../../gpu-runner/training/training-config.ts";
import { preparedSyntheticNuclei, syntheticNuclei } from "./synthetic-nuclei.ts";
import { TINY_NETWORK } from "./tiny-network.ts";

const SIZE = 48;
const imageBytes = preparedImageBytes(SIZE, SIZE, 1);

function cacheOf(count: number, budgetBytes: number) {
  const prepared: number[] = [];
  const ids = Array.from({ length: count }, (_, i) => `set/${i}`);
  const cache = new PreparedImageCache(
    ids,
    ids.map(() => ({ width: SIZE, height: SIZE, channels: 1 })),
    budgetBytes,
    async (i) => {
      prepared.push(i);
      return preparedSyntheticNuclei(ids[i]!, SIZE, i + 1);
    },
  );
  return { cache, prepared };
}

describe("PreparedImageCache", () => {
  it("prepares an image when first drawn and keeps it while the budget allows", async () => {
    const { cache, prepared } = cacheOf(3, 3 * imageBytes);
    for (const i of [0, 1, 2, 0, 1, 2, 2]) expect((await cache.get(i)).id).toBe(`set/${i}`);
    expect(prepared).toEqual([0, 1, 2]);
    expect(cache.stats()).toEqual({ budgetBytes: 3 * imageBytes, residentBytes: 3 * imageBytes, peakBytes: 3 * imageBytes, preparations: 3 });
  });

  it("past the budget drops the least recently drawn image and prepares it again when drawn again", async () => {
    const { cache, prepared } = cacheOf(3, 2 * imageBytes);
    await cache.get(0);
    await cache.get(1);
    await cache.get(0); // 1 is now the least recently drawn
    await cache.get(2); // drops 1
    await cache.get(0); // still held
    await cache.get(1); // prepared again, drops 2
    expect(prepared).toEqual([0, 1, 2, 1]);
    expect(cache.stats()).toMatchObject({ residentBytes: 2 * imageBytes, peakBytes: 2 * imageBytes, preparations: 4 });
  });

  it("never holds more than its budget, however many images are drawn in whatever order", async () => {
    const { cache, prepared } = cacheOf(40, 5.5 * imageBytes);
    const random = new SeededRandom(7);
    for (let n = 0; n < 300; n++) {
      await cache.get(random.below(40));
      expect(cache.stats().residentBytes).toBeLessThanOrEqual(5.5 * imageBytes);
    }
    expect(cache.stats().peakBytes).toBe(5 * imageBytes);
    expect(new Set(prepared).size).toBe(40);
  });

  it("refuses, before preparing anything, an image that alone needs more than the budget", () => {
    const make = () =>
      new PreparedImageCache(["set/big"], [{ width: 4000, height: 3000, channels: 1 }], 100 * 2 ** 20, async () => {
        throw new Error("not prepared");
      });
    expect(make).toThrow(InputError);
    expect(make).toThrow(
      "training image 1 (4000x3000) needs 149 MiB prepared for training, more than this runner's training memory budget of 100 MiB (TRAINING_MEMORY_MB)",
    );
  });
});

/** Pairs of synthetic nuclei, each read (made) when fine-tuning asks for it, recorded in `reads`. */
function pairsCountingReads(count: number, reads: number[]) {
  return Array.from({ length: count }, (_, i) => () => {
    reads.push(i);
    const { image, labels } = syntheticNuclei(SIZE, SIZE, 6, i + 1);
    const decoded: DecodedImage = { width: SIZE, height: SIZE, channels: 1, bitDepth: 32, sampleFormat: "float", data: image };
    return { image: decoded, labels };
  });
}

describe("fineTune within a memory budget", () => {
  const network = { ...TINY_NETWORK, inputChannels: 1 };
  const base = exportModel(
    defaultTrainingConfig(10, { network, cropSize: 32, modelDiameter: 12 }),
    initialParameters(parameterLayout(network), 5),
    "tiny",
    "0",
    { source: "test" },
  );

  it("trains on images that together need more than the budget, reading them again as needed and holding at most the budget", async () => {
    const reads: number[] = [];
    const pairs = pairsCountingReads(12, reads);
    const budgetBytes = 3 * imageBytes; // 10 training images (2 held out) need 10 × imageBytes
    const result = await fineTune({ base, pairs, budget: { steps: 6 }, batchSize: 4, threads: 1, validations: 1, memoryBudgetBytes: budgetBytes });
    expect(result.steps).toBe(6);
    expect(result.memory.budgetBytes).toBe(budgetBytes);
    expect(result.memory.peakBytes).toBeLessThanOrEqual(budgetBytes);
    expect(result.memory.residentBytes).toBeLessThanOrEqual(budgetBytes);
    // 24 crops from 10 images with room for 3: images were dropped and read again.
    expect(result.memory.preparations).toBeGreaterThan(3);
    expect(reads.length).toBeGreaterThan(12);
  });

  it("with room for every image reads each once to prepare it, and no more for training", async () => {
    const reads: number[] = [];
    const pairs = pairsCountingReads(5, reads);
    const result = await fineTune({ base, pairs, budget: { steps: 4 }, batchSize: 4, threads: 1, validations: 1, holdOut: false });
    expect(result.memory.preparations).toBe(5);
    expect(result.memory.peakBytes).toBe(5 * imageBytes);
    expect(reads.sort()).toEqual([0, 1, 2, 3, 4]);
  });
});
