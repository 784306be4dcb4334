// The first guess of the cell diameter from a model input alone (diameter "auto"), the way each
// modality needs it: shared by segmentImage and the network's modality check
// (modality-by-network.ts), which guesses the diameter for each way it reads an image.
import { estimateDiameterFromImage } from "./diameter.ts";
import type { Modality } from "./modality.ts";

/**
 * On stained histology the foreground average overestimates the nuclei (median 1.48x the labelled
 * diameter on 16 dsb2018 histology training images: stained tissue around the nuclei joins the
 * foreground). Its guess is divided by this, chosen on 40 histology training images (AP@0.5 with
 * auto diameter 0.629 / 0.647 / 0.661 / 0.651 for 1.25 / 1.4 / 1.6 / 1.8; 0.699 at the true diameter).
 */
const HISTOLOGY_GUESS_DIVISOR = 1.6;

// Exported for its test only (test/engine/diameter.test.ts).
/**
 * On stained histology the first network pass runs at no less than this fraction of the model's
 * diameter (the image enlarged at most 4/3). The guess from image statistics reads pale, vesicular
 * nuclei at a fraction of their size (0.23 to 0.82 of the labelled diameter on the 8 TNBC crops that
 * chose cpsam-histology's step), and a pass with the image enlarged that much outlines chromatin
 * specks, whose masks then measure the nuclei too small again (0.51 to 0.72 of their size). Run at
 * 0.7 of the nuclei's size or more, the masks' median reads 0.92 to 0.98 of it. Chosen on those 8 crops and the 11 dsb2018 histology images of the
 * same selection part (mean AP@0.5 of the two groups with cpsam-histology, as served): 0.712 without
 * a floor, 0.722 / 0.719 / 0.737 / 0.727 / 0.740 for 0.5 / 0.6 / 0.75 / 1 / 1.25. 0.75 is within
 * noise of 1.25 (8 and 11 images) and shrinks no image on the first pass, which small nuclei need.
 */
export const HISTOLOGY_FIRST_PASS_FLOOR = 0.75;

/**
 * The diameter (px) of the objects in a normalised planar model input of `channels` planes, from
 * the image alone (diameter.ts); undefined when it has no foreground structure. Inverted
 * brightfield defeats the foreground average, so its blobs are counted; on histology and
 * fluorescence the average did better (README, "Automatic diameter").
 */
export function diameterGuessFromInput(
  data: Float32Array,
  channels: number,
  width: number,
  height: number,
  modality: Modality | undefined,
): number | undefined {
  const guess = estimateDiameterFromImage(channelMean(data, channels, width * height), width, height, { countBlobs: modality === "brightfield" });
  return guess !== undefined && modality === "histology" ? guess / HISTOLOGY_GUESS_DIVISOR : guess;
}

/**
 * The diameter (px) the first network pass of "auto" runs at, from the image's guess (undefined:
 * none, the model's own scale is used).
 */
export function firstPassDiameter(guess: number | undefined, modality: Modality | undefined, modelDiameter: number): number | undefined {
  if (guess === undefined || modality !== "histology") return guess;
  return Math.max(guess, HISTOLOGY_FIRST_PASS_FLOOR * modelDiameter);
}

/** Mean over the channels of a planar image (the data itself when it has one). */
function channelMean(data: Float32Array, channels: number, plane: number): Float32Array {
  if (channels === 1) return data;
  const mean = new Float32Array(plane);
  for (let c = 0; c < channels; c++) for (let i = 0; i < plane; i++) mean[i]! += data[c * plane + i]! / channels;
  return mean;
}
