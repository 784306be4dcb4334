// What a finished training is said to have achieved, wherever it is shown (models page, trainings
// table, the model's description, `train --wait`): one pair of scores and a plain verdict.
import { describe, expect, it } from "vitest";
import type { TrainingMetrics } from "../../schema/api-records.ts";
import { learnedNothing, trainingOutcomeText } from "../../schema/training-outcome.ts";

const metrics = (over: Partial<TrainingMetrics>): TrainingMetrics => ({
  evaluated_on: "held_out",
  evaluated_images: 2,
  base: { ap50: 0.444, ap75: 0.2 },
  fine_tuned: { ap50: 0.612, ap75: 0.3 },
  chosen_step: 300,
  note: "fine-tuning improved held-out AP@0.5 on 2 pairs from 0.444 to 0.612",
  ...over,
});

describe("a training's outcome", () => {
  it("beat its base: the fine-tuned score against the base's, on the held-out images", () => {
    expect(learnedNothing(metrics({}))).toBe(false);
    expect(trainingOutcomeText(metrics({}))).toBe("Beat its base: AP@0.5 0.612 against 0.444 on 2 held-out images");
  });

  it("kept the base's weights: said plainly, with the base's one score", () => {
    const kept = metrics({ chosen_step: 0, fine_tuned: { ap50: 0.444, ap75: 0.2 } });
    expect(learnedNothing(kept)).toBe(true);
    expect(trainingOutcomeText(kept)).toBe(
      "Did not beat its base: AP@0.5 0.444 on 2 held-out images, no step higher; the new model keeps the base's weights (same as base)",
    );
  });

  it("scored on the one image given, or not at all", () => {
    expect(trainingOutcomeText(metrics({ evaluated_on: "training_image", evaluated_images: 1 }))).toBe(
      "Beat its base: AP@0.5 0.612 against 0.444 on the image trained on (the only one given)",
    );
    const unscored = metrics({ evaluated_on: "none", evaluated_images: 0, chosen_step: 0, note: "no held-out pairs" });
    expect(learnedNothing(unscored)).toBe(false); // nothing was measured, so nothing is claimed
    expect(trainingOutcomeText(unscored)).toBe("Not evaluated: no held-out pairs");
  });
});
