// What a finished training is said to have achieved, wherever it is shown (models page, trainings
// table, the model's description, `train --wait`): the scores, how much the guard saw (images,
// objects), the gain with its interval, and a plain verdict that claims a gain only above noise.
import { describe, expect, it } from "vitest";
import type { TrainingEvidence, TrainingMetrics } from "../../schema/api-records.ts";
import { learnedNothing, trainingOutcomeText, unverified } from "../../schema/training-outcome.ts";

const evidence = (over: Partial<TrainingEvidence>): TrainingEvidence => ({
  images: 2,
  objects: 143,
  tiles: 96,
  min_objects: 20,
  fine_tuned_step: 300,
  fine_tuned_ap50: 0.612,
  gain: 0.168,
  gain_low: 0.08,
  gain_high: 0.25,
  confidence: 0.95,
  verdict: "gain",
  ...over,
});

const metrics = (over: Partial<TrainingMetrics>): TrainingMetrics => ({
  evaluated_on: "held_out",
  evaluated_images: 2,
  base: { ap50: 0.444, ap75: 0.2 },
  fine_tuned: { ap50: 0.612, ap75: 0.3 },
  chosen_step: 300,
  note: "on 2 held-out images (143 objects, 96 tiles) AP@0.5 rose from 0.444 to 0.612, ...",
  evidence: evidence({}),
  ...over,
});

/** The guard kept the base: the returned model's scores are the base's. */
const keptBase = (e: Partial<TrainingEvidence>) => metrics({ chosen_step: 0, fine_tuned: { ap50: 0.444, ap75: 0.2 }, evidence: evidence(e) });

describe("a training's outcome", () => {
  it("beat its base: the fine-tuned score against the base's, how much was seen, and the gain's interval above zero", () => {
    expect(learnedNothing(metrics({}))).toBe(false);
    expect(trainingOutcomeText(metrics({}))).toBe(
      "Beat its base: AP@0.5 0.612 against 0.444 on 2 held-out images (143 objects), +0.168 (95% interval +0.080 to +0.250)",
    );
  });

  it("a noise-level difference on one image is too few to tell, and the base's weights are kept", () => {
    const noise = keptBase({ images: 1, objects: 41, fine_tuned_ap50: 0.45, gain: 0.006, gain_low: -0.03, gain_high: 0.04, verdict: "too_few_to_tell" });
    noise.evaluated_images = 1;
    expect(learnedNothing(noise)).toBe(true);
    expect(trainingOutcomeText(noise)).toBe(
      "Too few to tell: AP@0.5 0.450 against 0.444 on 1 held-out image (41 objects), +0.006 (95% interval -0.030 to +0.040), a difference that could be noise; the new model keeps the base's weights (same as base)",
    );
    const thin = keptBase({ objects: 12, verdict: "too_few_to_tell" });
    expect(trainingOutcomeText(thin)).toMatch(
      /^Too few to tell: .* \(12 objects\), .*, under the 20 objects needed to tell a gain from noise; the new model keeps/,
    );
  });

  it("did not beat its base: said plainly, with the best fine-tuned score and the base's", () => {
    const lower = keptBase({ fine_tuned_ap50: 0.4, gain: -0.044, gain_low: -0.09, gain_high: -0.01, verdict: "no_gain" });
    expect(trainingOutcomeText(lower)).toBe(
      "Did not beat its base: AP@0.5 0.400 against 0.444 on 2 held-out images (143 objects), -0.044 (95% interval -0.090 to -0.010); the new model keeps the base's weights (same as base)",
    );
  });

  it("says where the evidence was drawn: held-out bands of the images, folds held out in turn, or the images trained on", () => {
    const bands = metrics({ evaluated_on: "held_out_regions", evaluated_images: 3, evaluated_regions: 3, folds: 3 });
    expect(trainingOutcomeText(bands)).toBe(
      "Beat its base: AP@0.5 0.612 against 0.444 on 3 held-out regions of 3 images (143 objects), +0.168 (95% interval +0.080 to +0.250)",
    );
    const rotated = metrics({ evaluated_on: "rotated_regions", evaluated_images: 2, evaluated_regions: 4, folds: 2 });
    expect(trainingOutcomeText(rotated)).toBe(
      "Beat its base: AP@0.5 0.612 against 0.444 on every object once, in 2 folds of 2 images held out in turn (143 objects), +0.168 (95% interval +0.080 to +0.250)",
    );
    const few = metrics({
      evaluated_on: "training_image",
      evaluated_images: 2,
      chosen_step: 0,
      evidence: evidence({ images: 2, objects: 12, verdict: "too_few_to_tell" }),
    });
    expect(trainingOutcomeText(few)).toBe(
      "Too few to tell: AP@0.5 0.612 against 0.444 on the images trained on (too few objects to hold any out; 12 objects), +0.168 (95% interval +0.080 to +0.250), under the 20 objects needed to judge a model: annotate 8 more and train again; the new model keeps the base's weights (same as base)",
    );
  });

  it("a difference that could be noise on held-out regions keeps the fine-tuned weights, marked unverified", () => {
    const noisy = metrics({
      evaluated_on: "held_out_regions",
      evaluated_images: 3,
      evaluated_regions: 3,
      chosen_step: 40,
      evidence: evidence({ objects: 60, fine_tuned_ap50: 0.45, gain: 0.006, gain_low: -0.03, gain_high: 0.04, verdict: "too_few_to_tell" }),
    });
    expect(unverified(noisy)).toBe(true);
    expect(learnedNothing(noisy)).toBe(false);
    expect(trainingOutcomeText(noisy)).toBe(
      "Unverified: AP@0.5 0.450 against 0.444 on 3 held-out regions of 3 images (60 objects), +0.006 (95% interval -0.030 to +0.040), a difference that could be noise; the new model keeps the fine-tuned weights, marked unverified: compare it with the base on your own images before relying on it",
    );
  });

  it("says where kept weights then trained on every region, the held-out bands too", () => {
    const bands = { evaluated_on: "held_out_regions", evaluated_images: 3, evaluated_regions: 3, chosen_step: 340, steps_on_all_regions: 40 } as const;
    expect(trainingOutcomeText(metrics(bands))).toBe(
      "Beat its base: AP@0.5 0.612 against 0.444 on 3 held-out regions of 3 images (143 objects), +0.168 (95% interval +0.080 to +0.250); its weights then trained 40 steps more on every region, the held-out ones too",
    );
    const noisy = metrics({
      ...bands,
      evidence: evidence({ objects: 60, fine_tuned_ap50: 0.45, gain: 0.006, gain_low: -0.03, gain_high: 0.04, verdict: "too_few_to_tell" }),
    });
    expect(trainingOutcomeText(noisy)).toBe(
      "Unverified: AP@0.5 0.450 against 0.444 on 3 held-out regions of 3 images (60 objects), +0.006 (95% interval -0.030 to +0.040), a difference that could be noise; the new model keeps the fine-tuned weights, trained 40 steps more on every region (the held-out ones too), marked unverified: compare it with the base on your own images before relying on it",
    );
  });

  it("says nothing was evaluated when nothing was held out", () => {
    const unscored = metrics({ evaluated_on: "none", evaluated_images: 0, chosen_step: 0, note: "nothing held out (as requested)", evidence: undefined });
    expect(learnedNothing(unscored)).toBe(false); // nothing was measured, so nothing is claimed
    expect(trainingOutcomeText(unscored)).toBe("Not evaluated: nothing held out (as requested)");
  });

  it("a training recorded before the guard weighed evidence shows its scores without claiming a gain", () => {
    const old = metrics({ evidence: undefined, evaluated_images: 1 });
    expect(trainingOutcomeText(old)).toBe(
      "Scored above its base: AP@0.5 0.612 against 0.444 on 1 held-out image (not tested against noise: trained before the service did so)",
    );
    expect(trainingOutcomeText({ ...old, chosen_step: 0 })).toBe(
      "Did not beat its base: AP@0.5 0.444 on 1 held-out image, no step higher; the new model keeps the base's weights (same as base)",
    );
  });
});
