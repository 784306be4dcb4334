// Fine-tuning's guard: the step count a time budget allows once validations are paid for, whether
// the model keeps its training objects' size, and the sentence that tells the user which weights
// they got, on how much evidence, and why.
import { describe, expect, it } from "vitest";
import { fineTuneNote, keepsLearnedSize, returnedWeights, stepsThatFit } from "../../gpu-runner/training/fine-tune-guard.ts";
import type { GainEvidence } from "../../gpu-runner/training/gain-evidence.ts";

describe("keepsLearnedSize", () => {
  it("gives the model its training objects' size where the image's own estimate fails outright", () => {
    expect(keepsLearnedSize(0.839, 0.105)).toBe(true);
    expect(keepsLearnedSize(0.708, 0.564)).toBe(true);
  });
  it("keeps the estimate on ties and on small wins, which two held-out pairs cannot tell from noise", () => {
    expect(keepsLearnedSize(0.5, 0.5)).toBe(false);
    expect(keepsLearnedSize(0.822, 0.764)).toBe(false);
    expect(keepsLearnedSize(0.721, 0.739)).toBe(false);
  });
});

describe("stepsThatFit", () => {
  it("spends the budget left after the validations on steps", () => {
    expect(stepsThatFit(100, 0.5, 20, 4)).toBe(160);
    expect(stepsThatFit(100, 0.5, 0, 4)).toBe(200);
  });
  it("keeps at least half the budget for steps, and at least the steps already timed", () => {
    expect(stepsThatFit(100, 0.5, 90, 4)).toBe(100);
    expect(stepsThatFit(1, 10, 0, 4)).toBe(4);
  });
});

const evidence = (over: Partial<GainEvidence>): GainEvidence => ({
  images: 2,
  tiles: 96,
  objects: 143,
  apBase: 0.47,
  apFineTuned: 0.62,
  gain: 0.15,
  low: 0.08,
  high: 0.22,
  confidence: 0.95,
  resamples: 2000,
  verdict: "gain",
  minObjects: 20,
  ...over,
});

describe("returnedWeights", () => {
  it("returns the fine-tuned weights on a gain, marks them unverified on a difference that could be noise, and returns the base on no gain", () => {
    expect(returnedWeights(evidence({ verdict: "gain" }), "held_out_regions")).toBe("fine_tuned");
    expect(returnedWeights(evidence({ verdict: "too_few_to_tell" }), "held_out_regions")).toBe("unverified");
    expect(returnedWeights(evidence({ verdict: "too_few_to_tell" }), "rotated_regions")).toBe("unverified");
    expect(returnedWeights(evidence({ verdict: "no_gain" }), "rotated_regions")).toBe("base");
  });
  it("never keeps weights on figures from the images trained on, and returns unvalidated weights when nothing was held out", () => {
    expect(returnedWeights(evidence({ verdict: "too_few_to_tell" }), "training_images")).toBe("base");
    expect(returnedWeights(undefined, "none")).toBe("fine_tuned");
  });
});

describe("fineTuneNote", () => {
  it("says what the guard saw and that a gain above noise keeps the fine-tuned weights", () => {
    expect(fineTuneNote({ evidence: evidence({}), candidateStep: 300, steps: 300 })).toBe(
      "on 2 held-out regions of the images (143 objects, 96 tiles) AP@0.5 rose from 0.470 to 0.620, +0.150 (95% interval +0.080 to +0.220): a gain, the fine-tuned weights are returned",
    );
  });
  it("names the step weighed when the last one was not the best validated", () => {
    expect(fineTuneNote({ evidence: evidence({}), candidateStep: 150, steps: 300, apLastStep: 0.6 })).toBe(
      "on 2 held-out regions of the images (143 objects, 96 tiles) AP@0.5 rose from 0.470 to 0.620 (the best validated fine-tuned weights, step 150 of 300; 0.600 after step 300), +0.150 (95% interval +0.080 to +0.220): a gain, the fine-tuned weights are returned",
    );
  });
  it("calls a difference within noise too few to tell, and returns the fine-tuned weights marked unverified", () => {
    const noise = evidence({
      images: 1,
      objects: 41,
      tiles: 20,
      apBase: 0.938,
      apFineTuned: 0.944,
      gain: 0.006,
      low: -0.03,
      high: 0.04,
      verdict: "too_few_to_tell",
    });
    expect(fineTuneNote({ evidence: noise, candidateStep: 812, steps: 812 })).toBe(
      "on 1 held-out region of the images (41 objects, 20 tiles) AP@0.5 rose from 0.938 to 0.944, +0.006 (95% interval -0.030 to +0.040): too few to tell a gain from noise, the fine-tuned weights are returned as a model marked unverified: compare it with the base on your own images before relying on it",
    );
    const thin = evidence({ images: 1, objects: 12, tiles: 6, verdict: "too_few_to_tell" });
    expect(fineTuneNote({ evidence: thin, candidateStep: 10, steps: 10 })).toMatch(
      /too few to tell a gain from noise \(12 objects scored, under the 20 needed\), the fine-tuned weights are returned as a model marked unverified/,
    );
  });
  it("says a lower score is no gain", () => {
    const loss = evidence({ apBase: 0.861, apFineTuned: 0.813, gain: -0.048, low: -0.09, high: -0.01, verdict: "no_gain" });
    expect(fineTuneNote({ evidence: loss, candidateStep: 300, steps: 300 })).toBe(
      "on 2 held-out regions of the images (143 objects, 96 tiles) AP@0.5 fell from 0.861 to 0.813, -0.048 (95% interval -0.090 to -0.010): no gain, the base weights are returned unchanged",
    );
  });
  it("when the whole set is below the minimum, says the figures are on the images trained on and how many objects to add", () => {
    const few = evidence({ images: 2, objects: 12, tiles: 15, apBase: 0.2, apFineTuned: 0.5, gain: 0.3, low: 0.1, high: 0.5, verdict: "too_few_to_tell" });
    expect(fineTuneNote({ evidence: few, candidateStep: 10, steps: 10, heldOutBy: "training_images", missing: 8 })).toBe(
      "on the images trained on (12 objects, 15 tiles; too few objects to hold any out) AP@0.5 rose from 0.200 to 0.500, +0.300 (95% interval +0.100 to +0.500): too few to tell: the images hold 12 annotated objects, under the 20 needed to judge a model; annotate 8 more and train again. The base weights are returned unchanged; figures on the images trained on say how well it learned them, not how it does on others",
    );
  });
  it("says when every object was judged once by folds held out in turn, and that the weights returned were trained on all of them", () => {
    const folds = evidence({ images: 6, objects: 45, tiles: 30 });
    expect(fineTuneNote({ evidence: folds, candidateStep: 40, steps: 40, heldOutBy: "rotated_regions", folds: 2 })).toBe(
      "on every object once, 2 folds of regions held out in turn (6 regions, 45 objects, 30 tiles) AP@0.5 rose from 0.470 to 0.620, +0.150 (95% interval +0.080 to +0.220): a gain, the weights trained on every region are returned",
    );
  });
  it("says when nothing was validated", () => {
    expect(fineTuneNote({ evidence: undefined, candidateStep: 0, steps: 20 })).toBe(
      "nothing held out (as requested): the weights after step 20 are returned unvalidated",
    );
  });
});
