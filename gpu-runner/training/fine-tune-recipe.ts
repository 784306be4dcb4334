// How fine-tuning trains, chosen from the pairs it is given. Stained histology gets cpsam-histology's
// recipe (gpu-runner/models/cpsam-histology/README.md): a one-channel base widened to read colour
// (network/colour-weights.ts: at step 0 it segments as the base does), so the stain's colour
// reaches the network; two slide variants per training image (stain-augment.ts), since a handful of
// crops from one or two slides shows one stain and one scanner; and the microscope augmentation
// with a zoom of 0.6-1.4; the model is served with cpsam-histology's mask defaults; and, where the
// base's manifest names no rate of its own, a peak learning rate of its own (STAINED_LEARNING_RATE).
// Why, and what it gains on a collection no public model learned: docs/benchmarks.md,
// bench:finetune (TNBC). Other modalities keep the standard recipe.
import type { ModelManifest } from "../engine/model.ts";
import type { Modality } from "../engine/modality.ts";
import { CELLPOSE_AUGMENTATION, MICROSCOPE_AUGMENTATION } from "./augment.ts";
import type { AugmentSettings } from "./augment.ts";

interface FineTuneRecipe {
  /** In words, for the result and the runner's log. */
  name: string;
  /** Input channels of the network trained: the base's, or 3 where a one-channel base is widened to colour. */
  inputChannels: number;
  /** Slide variants per stained training image (0: none). */
  slideVariants: number;
  augmentation: AugmentSettings;
  /** Mask defaults the fine-tuned model is served with, over the base's (none: the base's alone). */
  maskDefaults?: ModelManifest["maskDefaults"];
  /** Peak learning rate where neither the request nor the base's manifest names one (none: the trainer's default). */
  learningRate?: number;
}

/** cpsam-histology's per-crop transforms: the train CLI's --augmentation microscope --zoom-range 0.8. */
const STAINED_AUGMENTATION: AugmentSettings = { ...MICROSCOPE_AUGMENTATION, zoomRange: 0.8 };

/** cpsam-histology's --slide-variants. */
const STAINED_SLIDE_VARIANTS = 2;

// Exported for its test only (test/training/colour-training.test.ts).
/**
 * cpsam-histology's mask defaults (its manifest's maskDefaults.histology, chosen on its selection
 * slides and images): a colour network trained this way draws flows that the flow-error check
 * helps, where cpsam's one-channel histology defaults turn it off.
 */
export const STAINED_MASK_DEFAULTS: NonNullable<ModelManifest["maskDefaults"]> = { histology: { cellprobThreshold: 0, flowThreshold: 0.4, minSize: 30 } };

// Exported for its test only (test/training/colour-training.test.ts).
/**
 * The stained recipe's peak learning rate, four times the trainer's 5e-4 and the rate cpsam trained
 * at from scratch (cpsam-histology and cpsam-large name their own 1e-4). A stain and scanner no
 * public model learned are further from a base's training than another fluorescence set, and in
 * the default 600 s a stained fine-tuning of cpsam kept its last step: it had not finished
 * learning. Chosen on slides the report never scores: cpsam fine-tuned on one TNBC slide's 5
 * crops, scored on 25 crops of five other slides (tnbc-01, 02, 04, 05, 06), seed 1, 2026-11-29:
 * AP@0.5 0.567 / 0.591 / 0.610 at 5e-4 / 1e-3 / 2e-3 (docs/benchmarks.md, bench:finetune).
 */
export const STAINED_LEARNING_RATE = 2e-3;

const COLOUR_CHANNELS = 3;

/** A set is stained when most of its pairs are (the engine's modality of each image, readModality). */
function isStained(modalities: readonly Modality[]): boolean {
  return 2 * modalities.filter((m) => m === "histology").length > modalities.length;
}

export function fineTuneRecipe(modalities: readonly Modality[], baseInputChannels: number): FineTuneRecipe {
  if (!isStained(modalities))
    return { name: "standard: Cellpose augmentation", inputChannels: baseInputChannels, slideVariants: 0, augmentation: CELLPOSE_AUGMENTATION };
  const widened = baseInputChannels !== COLOUR_CHANNELS;
  return {
    name: `stained: ${widened ? "colour input, " : ""}stain variants, microscope augmentation`,
    inputChannels: COLOUR_CHANNELS,
    slideVariants: STAINED_SLIDE_VARIANTS,
    augmentation: STAINED_AUGMENTATION,
    maskDefaults: STAINED_MASK_DEFAULTS,
    learningRate: STAINED_LEARNING_RATE,
  };
}
