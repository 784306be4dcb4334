// What kind of microscopy an image is, and the one channel a nuclei model reads from it: bright
// nuclei on a dark background, whatever the modality.
// - fluorescence: the channel mean, as it is (Cellpose's grayscale mode).
// - brightfield and stained histology (H&E-like): the channel mean inverted (Cellpose's `invert`),
//   so dark nuclei on a bright field look like a nuclear stain.
// A colour model (manifest input "modality-colour") reads three planes made by the same rule, so
// nuclei are bright in all three as the one-channel convention has them: fluorescence and
// brightfield repeat that one channel (a nuclear stain in any colour of an RGB file reads the same
// as for a one-channel model); stained histology inverts R, G and B each on its own, which keeps
// the stain's colour (haematoxylin's blue against eosin's pink) that the mean throws away.
// Chosen by measurement for histology (gpu-runner/engine/README.md, "Modality"): against the
// haematoxylin optical density from colour deconvolution (Ruifrok & Johnston 2001), the inverted
// mean scored higher on the held-out dsb2018 histology images both before fine-tuning (AP@0.5
// 0.534 vs 0.485 with cpsam version 2) and after 150 fine-tuning steps on each (0.643 vs 0.625).
import type { Modality } from "../../schema/modality.ts";
import type { DecodedImage } from "../../common/decode/index.ts";

export { MODALITIES } from "../../schema/modality.ts";
export type { Modality, ModalityDecision } from "../../schema/modality.ts";
export { type ModalityReading, readModality } from "../../common/modality.ts";

/** The one channel a one-channel nuclei model reads for this modality: see the file comment. */
export function modalityChannel(image: DecodedImage, modality: Modality): Float32Array {
  const plane = image.width * image.height;
  // One channel is copied as it is (the caller normalises in place): a whole slide's glass blocks
  // are made into model input only to be found glass, and a copy costs a fraction of the mean.
  const out = image.channels === 1 ? image.data.slice(0, plane) : new Float32Array(plane);
  if (image.channels > 1) for (let c = 0; c < image.channels; c++) for (let i = 0; i < plane; i++) out[i]! += image.data[c * plane + i]! / image.channels;
  if (modality !== "fluorescence") {
    let max = -Infinity;
    for (let i = 0; i < plane; i++) if (out[i]! > max) max = out[i]!;
    for (let i = 0; i < plane; i++) out[i] = max - out[i]!;
  }
  return out;
}

/** The three planes a colour model reads for this modality: see the file comment. */
export function modalityColour(image: DecodedImage, modality: Modality): Float32Array {
  const plane = image.width * image.height;
  const out = new Float32Array(3 * plane);
  // A gray image has no stain colour to keep (detectModality never calls it histology; a user may
  // still say so): it reads as the inverted gray, repeated, as brightfield does.
  if (modality !== "histology" || image.channels < 3) {
    const channel = modalityChannel(image, modality);
    for (let c = 0; c < 3; c++) out.set(channel, c * plane);
    return out;
  }
  for (let c = 0; c < 3; c++) {
    const source = image.data.subarray(c * plane, (c + 1) * plane);
    let max = -Infinity;
    for (let i = 0; i < plane; i++) if (source[i]! > max) max = source[i]!;
    const target = out.subarray(c * plane, (c + 1) * plane);
    for (let i = 0; i < plane; i++) target[i] = max - source[i]!;
  }
  return out;
}
