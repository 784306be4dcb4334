// Fine-tuning's guard returns the fine-tuned weights only on evidence of a gain: the held-out
// images' tiles resampled in pairs (base and fine-tuned on the same tile) give the gain an
// interval, and only an interval above zero keeps the weights. Scores here are built object by
// object, as a segmentation of one or two held-out crops would give them.
import { describe, expect, it } from "vitest";
import { gainEvidence, MIN_HELD_OUT_OBJECTS } from "../../gpu-runner/training/gain-evidence.ts";
import type { ImageTiles } from "../../gpu-runner/training/held-out-tiles.ts";

/**
 * One held-out image of `objects` true objects, two to a tile, each found by the base, the
 * fine-tuned weights, both or neither; `falsePositives` spurious objects of each model, one to a tile.
 */
function image(counts: { both: number; onlyBase: number; onlyFineTuned: number; neither: number }, falsePositives = { base: 0, fineTuned: 0 }) {
  const found: [boolean, boolean][] = [
    ...Array.from({ length: counts.both }, () => [true, true] as [boolean, boolean]),
    ...Array.from({ length: counts.onlyBase }, () => [true, false] as [boolean, boolean]),
    ...Array.from({ length: counts.onlyFineTuned }, () => [false, true] as [boolean, boolean]),
    ...Array.from({ length: counts.neither }, () => [false, false] as [boolean, boolean]),
  ];
  // Spread the kinds over the tiles as a crop would mix them, not in runs of one kind.
  const shuffled = found.map((f, i) => ({ f, key: (i * 7919) % 104729 })).sort((a, b) => a.key - b.key);
  const tileCount = Math.ceil(found.length / 2) + Math.max(falsePositives.base, falsePositives.fineTuned);
  const tiles = (model: 0 | 1, spurious: number): ImageTiles => {
    const tp = new Int32Array(tileCount);
    const fp = new Int32Array(tileCount);
    const fn = new Int32Array(tileCount);
    shuffled.forEach(({ f }, i) => (f[model] ? tp : fn)[i >> 1]!++);
    for (let k = 0; k < spurious; k++) fp[Math.ceil(found.length / 2) + k]!++;
    return { index: Int32Array.from({ length: tileCount }, (_, k) => k), truePositives: tp, falsePositives: fp, falseNegatives: fn, objects: found.length };
  };
  return { base: tiles(0, falsePositives.base), fineTuned: tiles(1, falsePositives.fineTuned) };
}

function evidenceOn(...images: ReturnType<typeof image>[]) {
  return gainEvidence(
    images.map((i) => i.base),
    images.map((i) => i.fineTuned),
  );
}

describe("the guard's evidence for a gain", () => {
  it("keeps a large gain on a single held-out crop: 0.36 -> 0.59 on one crop of 80 nuclei, some found and some lost", () => {
    // Fine-tuning finds 26 nuclei the base missed and loses 8 the base found: 29 -> 47 of 80.
    const evidence = evidenceOn(image({ both: 21, onlyBase: 8, onlyFineTuned: 26, neither: 25 }));
    expect(evidence.apBase).toBeCloseTo(29 / 80, 9);
    expect(evidence.apFineTuned).toBeCloseTo(47 / 80, 9);
    expect(evidence.gain).toBeCloseTo(18 / 80, 9);
    expect(evidence).toMatchObject({ images: 1, objects: 80, tiles: 40, confidence: 0.95, verdict: "gain" });
    expect(evidence.low).toBeGreaterThan(0);
    expect(evidence.low).toBeLessThan(evidence.gain);
    expect(evidence.high).toBeGreaterThan(evidence.gain);
  });

  it("calls a noise-level difference too few to tell: 0.938 -> 0.944 on one image", () => {
    // 150 -> 151 of 160 found: 3 gained, 2 lost.
    const evidence = evidenceOn(image({ both: 148, onlyBase: 2, onlyFineTuned: 3, neither: 7 }));
    expect(evidence.apBase).toBeCloseTo(0.9375, 9);
    expect(evidence.gain).toBeCloseTo(1 / 160, 9);
    expect(evidence.low).toBeLessThan(0);
    expect(evidence.high).toBeGreaterThan(0);
    expect(evidence.verdict).toBe("too_few_to_tell");
  });

  it("calls a loss no gain, its interval below zero", () => {
    // 0.60 -> 0.40 on 100 objects, with spurious objects added by the fine-tuned weights.
    const evidence = evidenceOn(image({ both: 40, onlyBase: 20, onlyFineTuned: 4, neither: 36 }, { base: 0, fineTuned: 10 }));
    expect(evidence.gain).toBeLessThan(-0.15);
    expect(evidence.high).toBeLessThan(0);
    expect(evidence.verdict).toBe("no_gain");
  });

  it("claims no gain from fewer held-out objects than it needs, however large", () => {
    const evidence = evidenceOn(image({ both: 1, onlyBase: 0, onlyFineTuned: 10, neither: 1 }));
    expect(evidence.objects).toBeLessThan(MIN_HELD_OUT_OBJECTS);
    expect(evidence.gain).toBeGreaterThan(0.8);
    expect(evidence.verdict).toBe("too_few_to_tell");
    expect(evidence.minObjects).toBe(MIN_HELD_OUT_OBJECTS);
  });

  it("counts false positives against a model, in the image's AP from summed counts (not a mean of tile APs)", () => {
    // The same 40 of 50 found by both; the fine-tuned weights add 10 spurious objects: 0.8 -> 40/60.
    const evidence = evidenceOn(image({ both: 40, onlyBase: 0, onlyFineTuned: 0, neither: 10 }, { base: 0, fineTuned: 10 }));
    expect(evidence.apFineTuned).toBeCloseTo(40 / 60, 9);
    expect(evidence.gain).toBeCloseTo(40 / 60 - 0.8, 9);
    expect(evidence.verdict).toBe("no_gain");
  });

  it("weighs several images as validation does, the mean of each image's AP, resampling tiles within each image", () => {
    const clear = image({ both: 21, onlyBase: 8, onlyFineTuned: 26, neither: 25 });
    const unchanged = image({ both: 60, onlyBase: 0, onlyFineTuned: 0, neither: 20 });
    const evidence = evidenceOn(clear, unchanged);
    expect(evidence).toMatchObject({ images: 2, objects: 160, tiles: 80 });
    expect(evidence.gain).toBeCloseTo(18 / 80 / 2, 9);
    expect(evidence.verdict).toBe("gain");
  });

  it("pairs the two models' tiles by their place on the image, a tile one model left empty counting zero there", () => {
    const base: ImageTiles = {
      index: Int32Array.of(0, 1),
      truePositives: Int32Array.of(5, 5),
      falsePositives: Int32Array.of(0, 0),
      falseNegatives: Int32Array.of(5, 5),
      objects: 20,
    };
    const fineTuned: ImageTiles = {
      index: Int32Array.of(0, 1, 7),
      truePositives: Int32Array.of(5, 5, 0),
      falsePositives: Int32Array.of(0, 0, 4),
      falseNegatives: Int32Array.of(5, 5, 0),
      objects: 20,
    };
    const evidence = gainEvidence([base], [fineTuned]);
    expect(evidence.tiles).toBe(3);
    expect(evidence.apFineTuned).toBeCloseTo(10 / 24, 9);
  });

  it("gives the same interval for the same scores and seed, so a result can be checked", () => {
    const scores = image({ both: 148, onlyBase: 2, onlyFineTuned: 3, neither: 7 });
    const once = gainEvidence([scores.base], [scores.fineTuned], { seed: 3 });
    expect(gainEvidence([scores.base], [scores.fineTuned], { seed: 3 })).toEqual(once);
    expect(() => gainEvidence([scores.base], [])).toThrow(/same held-out images/);
  });
});
