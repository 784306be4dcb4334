// Everything that defines a training run; stored in checkpoints and training records.
import type { AdamWSettings } from "../network/adamw.ts";
import { DEFAULT_ADAMW } from "../network/adamw.ts";
import type { NetworkConfig } from "../network/flow-network.ts";
import { CELLPOSE_AUGMENTATION } from "./augment.ts";
import type { AugmentSettings } from "./augment.ts";
import type { LearningRateSchedule } from "./learning-rate.ts";

export interface TrainingConfig {
  network: NetworkConfig;
  /** Object diameter (pixels) the network sees; images are rescaled to it. */
  modelDiameter: number;
  cropSize: number;
  batchSize: number;
  seed: number;
  schedule: LearningRateSchedule;
  adamW: AdamWSettings;
  augmentation: AugmentSettings;
  /**
   * How a crop's source image is drawn: "per-set" gives every data set (setOfImage: the set, and
   * the modality where a set lists several) the same share whatever its image count; "per-image"
   * draws every image equally often, as Cellpose does; "sqrt" gives each set a share in proportion
   * to the square root of its image count, between the two. Checkpoints written before this field
   * existed used "per-set".
   */
  sampling?: ImageSampling;
}

export type ImageSampling = "per-set" | "per-image" | "sqrt";
export const IMAGE_SAMPLINGS: readonly ImageSampling[] = ["per-set", "per-image", "sqrt"];

/** The base model's architecture, chosen by measurement (see gpu-runner/models/cpsam/README.md). */
export const CPSAM_NETWORK: NetworkConfig = { inputChannels: 1, widths: [16, 32, 64, 128] };

/** cpsam-large's network (its model card says why these widths): colour input, 4.67x cpsam's weights. */
export const CPSAM_LARGE_NETWORK: NetworkConfig = { inputChannels: 3, widths: [24, 48, 96, 352] };

/** Peak learning rate when starting from trained weights (from scratch: 2e-3). */
export const FINE_TUNE_PEAK_LEARNING_RATE = 5e-4;

export function defaultTrainingConfig(totalSteps: number, overrides: Partial<TrainingConfig> = {}): TrainingConfig {
  return {
    network: CPSAM_NETWORK,
    modelDiameter: 24,
    cropSize: 224,
    batchSize: 8,
    seed: 1,
    schedule: { peak: 2e-3, warmupSteps: Math.min(100, Math.ceil(totalSteps / 10)), totalSteps, finalFraction: 0.02 },
    adamW: DEFAULT_ADAMW,
    augmentation: CELLPOSE_AUGMENTATION,
    sampling: "per-set",
    ...overrides,
  };
}
