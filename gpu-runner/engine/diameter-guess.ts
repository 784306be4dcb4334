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

/** Mean over the channels of a planar image (the data itself when it has one). */
function channelMean(data: Float32Array, channels: number, plane: number): Float32Array {
  if (channels === 1) return data;
  const mean = new Float32Array(plane);
  for (let c = 0; c < channels; c++) for (let i = 0; i < plane; i++) mean[i]! += data[c * plane + i]! / channels;
  return mean;
}
