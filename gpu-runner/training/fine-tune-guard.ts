// The arithmetic and wording of fine-tuning's guard (fine-tune.ts): how many steps fit a time
// budget that also pays for validations, whether the model keeps its training objects' size, and
// what to tell the user about the weights returned.

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
export const LEARNED_SIZE_MARGIN = 0.1;

export function keepsLearnedSize(apWithSize: number, apWithEstimate: number): boolean {
  return apWithSize > apWithEstimate + LEARNED_SIZE_MARGIN;
}

const ap = (value: number) => value.toFixed(3);

/**
 * One sentence on the outcome; chosenStep 0 means the base weights were returned. onTrainingImage:
 * the single pair given was scored, so the figures are on the training image, not held-out ones.
 */
export function fineTuneNote(
  apBefore: number | undefined,
  apAfter: number | undefined,
  apLastStep: number | undefined,
  chosenStep: number,
  steps: number,
  heldOut: number,
  onTrainingImage = false,
): string {
  if (apBefore === undefined || apAfter === undefined) {
    return `no held-out pairs (give at least two pairs to hold one out): the weights after step ${steps} are returned unvalidated`;
  }
  const where = onTrainingImage
    ? "AP@0.5 on the training image (the only image given, so none could be held out)"
    : `held-out AP@0.5 on ${heldOut} pair${heldOut === 1 ? "" : "s"}`;
  if (chosenStep === 0) {
    const last = apLastStep === undefined ? "" : ` (${ap(apLastStep)} after step ${steps})`;
    return `fine-tuning did not improve ${where}: base ${ap(apBefore)}, best fine-tuned no higher${last}; the base weights are returned unchanged`;
  }
  const last =
    chosenStep === steps
      ? ""
      : ` (the weights of step ${chosenStep}, the best validated; ${apLastStep === undefined ? "" : `${ap(apLastStep)} after step ${steps}`})`;
  return `fine-tuning improved ${where} from ${ap(apBefore)} to ${ap(apAfter)}${last}`;
}
