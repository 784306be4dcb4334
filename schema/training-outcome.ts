// What a completed training achieved, in one place: whether its model beat the base on the
// held-out images by more than noise, and the sentence that says so with the evidence it rests on
// (how many images and objects, the gain and its interval). The models page, the trainings table
// (the script shows the server's rendering of it), the model's description and the client's
// `train --wait` all say it with these.
import type { TrainingEvidence, TrainingMetrics } from "./api-records.ts";

/** The guard kept the base weights: the training was validated and no step beat the base by more than noise. */
export function learnedNothing(metrics: TrainingMetrics): boolean {
  return metrics.evaluated_on !== "none" && metrics.chosen_step === 0;
}

/** The fine-tuned weights were kept on a difference that could be noise: the model is marked unverified, for the user to compare with its base. */
export function unverified(metrics: TrainingMetrics): boolean {
  return metrics.evidence?.verdict === "too_few_to_tell" && metrics.chosen_step > 0;
}

const score = (ap: number | null) => (ap === null ? "—" : ap.toFixed(3));
const signed = (value: number) => `${value < 0 ? "-" : "+"}${Math.abs(value).toFixed(3)}`;
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** Where the scores were measured, and on how many objects when that is known; the client's `train --wait` prints it too. */
export function scoredOn(metrics: TrainingMetrics, objects?: number): string {
  const counted = objects === undefined ? "" : plural(objects, "object");
  const images = plural(metrics.evaluated_images, "image");
  const regions = plural(metrics.evaluated_regions ?? metrics.evaluated_images, "held-out region");
  switch (metrics.evaluated_on) {
    case "training_image":
      return `the images trained on (too few objects to hold any out${counted && `; ${counted}`})`;
    case "held_out_regions":
      return `${regions} of ${images}${counted && ` (${counted})`}`;
    case "rotated_regions":
      return `every object once, in ${metrics.folds ?? 0} folds of ${images} held out in turn${counted && ` (${counted})`}`;
    case "none":
      return "nothing (not evaluated)";
    default:
      return `${plural(metrics.evaluated_images, "held-out image")}${counted && ` (${counted})`}`;
  }
}

/** "AP@0.5 0.620 against 0.470 on 2 held-out images (143 objects), +0.150 (95% interval +0.080 to +0.220)" */
function figures(metrics: TrainingMetrics, e: TrainingEvidence): string {
  const interval = `${Math.round(e.confidence * 100)}% interval ${signed(e.gain_low)} to ${signed(e.gain_high)}`;
  return `AP@0.5 ${score(e.fine_tuned_ap50)} against ${score(metrics.base.ap50)} on ${scoredOn(metrics, e.objects)}, ${signed(e.gain)} (${interval})`;
}

const SAME_AS_BASE = "the new model keeps the base's weights (same as base)";

export function trainingOutcomeText(metrics: TrainingMetrics): string {
  if (metrics.evaluated_on === "none") return `Not evaluated: ${metrics.note}`;
  const e = metrics.evidence;
  if (!e) {
    // Recorded before the guard weighed its evidence: the scores, without claiming what they show.
    if (learnedNothing(metrics)) return `Did not beat its base: AP@0.5 ${score(metrics.base.ap50)} on ${scoredOn(metrics)}, no step higher; ${SAME_AS_BASE}`;
    return `Scored above its base: AP@0.5 ${score(metrics.fine_tuned.ap50)} against ${score(metrics.base.ap50)} on ${scoredOn(metrics)} (not tested against noise: trained before the service did so)`;
  }
  const continued = metrics.steps_on_all_regions ? `trained ${plural(metrics.steps_on_all_regions, "step")} more on every region` : "";
  if (e.verdict === "gain") return `Beat its base: ${figures(metrics, e)}${continued && `; its weights then ${continued}, the held-out ones too`}`;
  if (e.verdict === "no_gain") return `Did not beat its base: ${figures(metrics, e)}; ${SAME_AS_BASE}`;
  const why =
    metrics.evaluated_on === "training_image"
      ? `under the ${e.min_objects} objects needed to judge a model: annotate ${Math.max(0, e.min_objects - e.objects)} more and train again`
      : e.objects < e.min_objects
        ? `under the ${e.min_objects} objects needed to tell a gain from noise`
        : "a difference that could be noise";
  if (unverified(metrics))
    return `Unverified: ${figures(metrics, e)}, ${why}; the new model keeps the fine-tuned weights${continued && `, ${continued} (the held-out ones too)`}, marked unverified: compare it with the base on your own images before relying on it`;
  return `Too few to tell: ${figures(metrics, e)}, ${why}; ${SAME_AS_BASE}`;
}
