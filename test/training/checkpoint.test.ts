// Interrupting a run and resuming from its checkpoint continues exactly as if never interrupted.
import { describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeCheckpoint, encodeCheckpoint, loadCheckpoint, saveCheckpoint } from "../../gpu-runner/training/checkpoint.ts";
import { preparedInMemory } from "../../gpu-runner/training/prepared-image-cache.ts";
import { defaultTrainingConfig } from "../../gpu-runner/training/training-config.ts";
import { freshTrainingState, Trainer } from "../../gpu-runner/training/trainer.ts";
import { preparedSyntheticNuclei } from "./synthetic-nuclei.ts";
import { TINY_NETWORK } from "./tiny-network.ts";

const sources = preparedInMemory([preparedSyntheticNuclei("a/one", 48, 1), preparedSyntheticNuclei("b/two", 48, 2)]);
const config = defaultTrainingConfig(20, { network: { ...TINY_NETWORK, inputChannels: 1 }, cropSize: 32, batchSize: 2, seed: 42 });

describe("checkpoints", () => {
  it("resume to the same state: weights, moments, step and random stream", async () => {
    const uninterrupted = await Trainer.create(freshTrainingState(config), sources, { intraOpNumThreads: 1 });
    await uninterrupted.step();
    await uninterrupted.step();
    const saved = encodeCheckpoint(uninterrupted.state);
    await uninterrupted.step();
    await uninterrupted.step();

    const restored = decodeCheckpoint(saved);
    expect(restored.step).toBe(2);
    const resumed = await Trainer.create(restored, sources, { intraOpNumThreads: 1 });
    await resumed.step();
    await resumed.step();

    expect(resumed.state.step).toBe(4);
    expect(resumed.state.randomState).toBe(uninterrupted.state.randomState);
    expect(resumed.state.params).toEqual(uninterrupted.state.params);
    expect(resumed.state.firstMoment).toEqual(uninterrupted.state.firstMoment);
    expect(resumed.state.secondMoment).toEqual(uninterrupted.state.secondMoment);
    expect(resumed.state.params).not.toEqual(decodeCheckpoint(saved).params);
  });

  it("round-trip through a file exactly", async () => {
    const trainer = await Trainer.create(freshTrainingState(config), sources, { intraOpNumThreads: 1 });
    await trainer.step();
    const dir = mkdtempSync(join(tmpdir(), "checkpoint-"));
    try {
      saveCheckpoint(join(dir, "run.bin"), trainer.state);
      const loaded = loadCheckpoint(join(dir, "run.bin"));
      expect(loaded.params).toEqual(trainer.state.params);
      expect(loaded.firstMoment).toEqual(trainer.state.firstMoment);
      expect(loaded.secondMoment).toEqual(trainer.state.secondMoment);
      expect(loaded.config).toEqual(trainer.state.config);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  it("refuse truncated or foreign bytes with a clear error", () => {
    const bytes = encodeCheckpoint(freshTrainingState(config));
    expect(() => decodeCheckpoint(bytes.subarray(0, bytes.length - 4))).toThrow(/truncated/);
    expect(() => decodeCheckpoint(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]))).toThrow(/not a training checkpoint/);
  });
});
