// Fine-tuning's guard: the step count a time budget allows once validations are paid for, whether
// the model keeps its training objects' size, and the sentence that tells the user which weights
// they got and why.
import { describe, expect, it } from "vitest";
import { fineTuneNote, keepsLearnedSize, stepsThatFit } from "../../gpu-runner/training/fine-tune-guard.ts";

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

describe("fineTuneNote", () => {
  it("says when the base weights came back because fine-tuning did not beat them", () => {
    expect(fineTuneNote(0.861, 0.861, 0.813, 0, 300, 2)).toBe(
      "fine-tuning did not improve held-out AP@0.5 on 2 pairs: base 0.861, best fine-tuned no higher (0.813 after step 300); the base weights are returned unchanged",
    );
  });
  it("reports an improvement, naming an earlier step when the last one was not the best", () => {
    expect(fineTuneNote(0.1, 0.8, 0.8, 300, 300, 1)).toBe("fine-tuning improved held-out AP@0.5 on 1 pair from 0.100 to 0.800");
    expect(fineTuneNote(0.1, 0.8, 0.7, 150, 300, 1)).toBe(
      "fine-tuning improved held-out AP@0.5 on 1 pair from 0.100 to 0.800 (the weights of step 150, the best validated; 0.700 after step 300)",
    );
  });
  it("says when the figures are on the training image because a single image was given", () => {
    expect(fineTuneNote(0.2, 0.5, 0.5, 10, 10, 1, true)).toBe(
      "fine-tuning improved AP@0.5 on the training image (the only image given, so none could be held out) from 0.200 to 0.500",
    );
  });
  it("says when nothing could be validated", () => {
    expect(fineTuneNote(undefined, undefined, undefined, 0, 20, 0)).toMatch(/no held-out pairs .* after step 20 are returned unvalidated/);
  });
});
