// What a completed training achieved, in one place: whether its model beat the base on the
// held-out images, and the sentence that says so with one pair of scores measured the same way.
// The models page, the trainings table (and its script's copy in dashboard.js), the model's
// description and the client's `train --wait` all say it with these.
import type { TrainingMetrics } from "./api-records.ts";

/** The guard kept the base weights: the training was validated and no step beat the base. */
export function learnedNothing(metrics: TrainingMetrics): boolean {
  return metrics.evaluated_on !== "none" && metrics.chosen_step === 0;
}

const score = (ap: number | null) => (ap === null ? "—" : ap.toFixed(3));

function where(metrics: TrainingMetrics): string {
  if (metrics.evaluated_on === "training_image") return "the image trained on (the only one given)";
  return `${metrics.evaluated_images} held-out image${metrics.evaluated_images === 1 ? "" : "s"}`;
}

export function trainingOutcomeText(metrics: TrainingMetrics): string {
  if (metrics.evaluated_on === "none") return `Not evaluated: ${metrics.note}`;
  if (learnedNothing(metrics)) {
    return `Did not beat its base: AP@0.5 ${score(metrics.base.ap50)} on ${where(metrics)}, no step higher; the new model keeps the base's weights (same as base)`;
  }
  return `Beat its base: AP@0.5 ${score(metrics.fine_tuned.ap50)} against ${score(metrics.base.ap50)} on ${where(metrics)}`;
}
