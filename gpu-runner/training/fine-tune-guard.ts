// The arithmetic and wording of fine-tuning's guard (fine-tune.ts): how many steps fit a time
// budget that also pays for validations, whether the model keeps its training objects' size, and
// what to tell the user about the weights returned (which weights that is: gain-evidence.ts).
import type { GainEvidence } from "./gain-evidence.ts";
import type { EvidenceKind } from "./fine-tune-runs.ts";

/**
 * Steps that fit `seconds` at `stepSeconds` each once `validationSeconds` (all validations
 * together) are paid; validation never takes more than half the budget's share in this estimate.
 */
export function stepsThatFit(seconds: number, stepSeconds: number, validationSeconds: number, atLeast: number): number {
  const forSteps = Math.max(seconds / 2, seconds - validationSeconds);
  return Math.max(atLeast, Math.floor(forSteps / stepSeconds));
}

/**
 * How much better (AP@0.5 on the held-out pairs, diameter "auto") the training objects' size must
 * segment than the image's own estimate before a model is given that size. A fixed start serves
 * every later image, and the held-out pairs are few: on dsb2018 histology the size won on 2 pairs
 * by 0.058 and then cost 0.143 on 13 unseen images, some of whose nuclei were twice the training
 * ones. The size is for estimates that fail outright (0.0–0.2 against 0.7–0.8 on brightfield
 * before blob counting).
 */
const LEARNED_SIZE_MARGIN = 0.1;

export function keepsLearnedSize(apWithSize: number, apWithEstimate: number): boolean {
  return apWithSize > apWithEstimate + LEARNED_SIZE_MARGIN;
}

/**
 * Which weights a fine-tuning returns on its evidence: the fine-tuned ones on a gain; on a
 * difference that could be noise, the fine-tuned ones marked "unverified" (the user compares and
 * chooses; issue #46), except where the figures are on the images trained on, which cannot show a
 * gain; the base's on no gain. Without evidence (nothing held out) the fine-tuned ones, unvalidated.
 */
type ReturnedWeights = "fine_tuned" | "unverified" | "base";

export function returnedWeights(evidence: GainEvidence | undefined, heldOutBy: EvidenceKind): ReturnedWeights {
  if (!evidence || evidence.verdict === "gain") return "fine_tuned";
  if (evidence.verdict === "too_few_to_tell" && heldOutBy !== "training_images") return "unverified";
  return "base";
}

const ap = (value: number) => value.toFixed(3);
const signed = (value: number) => `${value < 0 ? "-" : "+"}${Math.abs(value).toFixed(3)}`;
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

interface FineTuneOutcome {
  /** The guard's evidence: the base against the fine-tuned weights; undefined when nothing was scored. */
  evidence: GainEvidence | undefined;
  /** The fine-tuned step weighed against the base: the best validated one, or (rotated folds) the last. */
  candidateStep: number;
  /** Steps run (by the run whose weights are returned). */
  steps: number;
  /** AP@0.5 after the last step, where it was validated. */
  apLastStep?: number;
  /** How the judged part was drawn (fine-tune-runs.ts); "held_out_regions" unless told. */
  heldOutBy?: EvidenceKind;
  /** The folds the objects were split into. */
  folds?: number;
  /** training_images: the objects that would bring the set to the guard's minimum. */
  missing?: number;
  /** Steps the kept weights trained on every region after the verdict, the judged ones too. */
  thenOnEverything?: number;
}

/**
 * One sentence for the user on what the guard saw and decided, e.g. "on 6 held-out regions of 6
 * images (143 objects, 96 tiles) AP@0.5 rose from 0.470 to 0.620, +0.150 (95% interval +0.080 to
 * +0.220): a gain, the fine-tuned weights are returned".
 */
export function fineTuneNote({
  evidence,
  candidateStep,
  steps,
  apLastStep,
  heldOutBy = "held_out_regions",
  folds = 0,
  missing = 0,
  thenOnEverything = 0,
}: FineTuneOutcome): string {
  if (!evidence) return `nothing held out (as requested): the weights after step ${steps} are returned unvalidated`;
  const e = evidence;
  const counted = `${plural(e.objects, "object")}, ${plural(e.tiles, "tile")}`;
  const where = {
    held_out_regions: `on ${plural(e.images, "held-out region")} of the images (${counted})`,
    rotated_regions: `on every object once, ${folds} folds of regions held out in turn (${plural(e.images, "region")}, ${counted})`,
    training_images: `on the images trained on (${counted}; too few objects to hold any out)`,
    none: `on ${plural(e.images, "region")} (${counted})`,
  }[heldOutBy];
  const move =
    e.apFineTuned === e.apBase ? `stayed at ${ap(e.apBase)}` : `${e.apFineTuned > e.apBase ? "rose" : "fell"} from ${ap(e.apBase)} to ${ap(e.apFineTuned)}`;
  const interval = `${signed(e.gain)} (${Math.round(e.confidence * 100)}% interval ${signed(e.low)} to ${signed(e.high)})`;
  const which =
    candidateStep === steps || heldOutBy === "rotated_regions"
      ? ""
      : ` (the best validated fine-tuned weights, step ${candidateStep} of ${steps}${apLastStep === undefined ? "" : `; ${ap(apLastStep)} after step ${steps}`})`;
  const fineTuned =
    heldOutBy === "rotated_regions"
      ? "the weights trained on every region"
      : thenOnEverything > 0
        ? `the fine-tuned weights, trained ${plural(thenOnEverything, "step")} more on every region (the held-out ones too),`
        : "the fine-tuned weights";
  const tooFew =
    heldOutBy === "training_images"
      ? `too few to tell: the images hold ${plural(e.objects, "annotated object")}, under the ${e.minObjects} needed to judge a model; annotate ${missing} more and train again. The base weights are returned unchanged`
      : `too few to tell a gain from noise${e.objects < e.minObjects ? ` (${plural(e.objects, "object")} scored, under the ${e.minObjects} needed)` : ""}, ${fineTuned} are returned as a model marked unverified: compare it with the base on your own images before relying on it`;
  const verdict = {
    gain: `a gain, ${fineTuned} are returned`,
    too_few_to_tell: tooFew,
    no_gain: "no gain, the base weights are returned unchanged",
  }[e.verdict];
  const caveat = heldOutBy === "training_images" ? "; figures on the images trained on say how well it learned them, not how it does on others" : "";
  return `${where} AP@0.5 ${move}${which}, ${interval}: ${verdict}${caveat}`;
}
