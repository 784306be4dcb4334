// What a network this project's trainer makes reads: one channel made for the image's modality
// (inputChannels 1), or three planes made for it (inputChannels 3, the manifest's input
// "modality-colour"). Both are made by the engine's own rule (engine/model-input.ts), so a network
// trains on exactly what inference will feed it; the channel count alone says which.
import { MODALITY_COLOUR } from "../engine/model.ts";
import type { ModelReads } from "../engine/model.ts";

export const ONE_CHANNEL: ModelReads = { channels: 1 };
// Exported for its tests only (test/training/colour-training.test.ts, test/training/labelled-images.test.ts).
export const COLOUR: ModelReads = { channels: 3, input: MODALITY_COLOUR };

export function networkReads(inputChannels: number): ModelReads {
  if (inputChannels === 1) return ONE_CHANNEL;
  if (inputChannels === 3) return COLOUR;
  throw new Error(`this project's trainer makes networks of one channel or of three (colour made for the modality), not of ${inputChannels}`);
}

/** Whether a model's manifest says it reads what a network of these input channels reads. */
export function manifestReadsAs(manifest: ModelReads, inputChannels: number): boolean {
  const reads = networkReads(inputChannels);
  return manifest.channels === reads.channels && manifest.input === reads.input;
}
