// What the network reads: the image's channels mapped onto the model's. A one-channel nuclei model
// reads one channel made for its modality (modality.ts): the mean of the channels for
// fluorescence (Cellpose's grayscale mode, channels=[0,0]: a nuclear stain rendered in one colour of
// an RGB file is found whichever colour it is), the inverted mean for brightfield and stained
// histology. A colour model (manifest input "modality-colour") reads three planes made for its
// modality by the same rule (modalityColour), so that the stain's colour reaches it on histology
// and everything else reads as it does for a one-channel model. Selected channels are read first,
// so a user's channel choice and the modality combine. Other models of more channels get the
// selected (or first) channels as they are.
import type { DecodedImage } from "../../common/decode/index.ts";
import { modalityChannel, modalityColour, readModality } from "./modality.ts";
import type { Modality, ModalityDecision, ModalityReading } from "./modality.ts";
import { InputError } from "./faults.ts";
import { MODALITY_COLOUR } from "./model.ts";
import type { ModelReads } from "./model.ts";

export interface ModelInput {
  image: DecodedImage;
  /** Models that read the modality (one channel, or colour): the modality the input was made for, and how it was decided. */
  modality?: ModalityDecision;
  /** With modality "auto" on such a model: what readModality made of the image, `sure` included (modality-by-network.ts checks an unsure one). */
  reading?: ModalityReading;
}

export function modelInput(image: DecodedImage, model: ModelReads, selection: number[] | undefined, modality: Modality | "auto" = "auto"): ModelInput {
  const selected = selection === undefined ? image : pickChannels(image, selection);
  if (model.channels === 1 || model.input === MODALITY_COLOUR) {
    const reading = modality === "auto" ? readModality(selected) : undefined;
    const decision: ModalityDecision = reading
      ? { modality: reading.modality, source: "detected", reason: reading.reason }
      : { modality: modality as Modality, source: "given" };
    const data = model.channels === 1 ? modalityChannel(selected, decision.modality) : modalityColour(selected, decision.modality);
    return { image: { ...selected, channels: model.channels, data }, modality: decision, ...(reading && { reading }) };
  }
  if (modality !== "auto" && modality !== "fluorescence")
    throw new InputError(`modality "${modality}" applies to one-channel and colour models; this model reads ${model.channels} channels as they are`);
  const chosen = selection === undefined ? Array.from({ length: Math.min(model.channels, image.channels) }, (_, i) => i) : selection.map((_, k) => k);
  if (chosen.length > model.channels) throw new InputError(`${chosen.length} channels selected, the model takes ${model.channels}`);
  const plane = image.width * image.height;
  const data = new Float32Array(model.channels * plane);
  chosen.forEach((c, k) => data.set(selected.data.subarray(c * plane, (c + 1) * plane), k * plane));
  return { image: { ...image, channels: model.channels, data } };
}

function pickChannels(image: DecodedImage, selection: number[]): DecodedImage {
  for (const c of selection)
    if (!Number.isInteger(c) || c < 0 || c >= image.channels) throw new InputError(`channel ${c} does not exist (image has ${image.channels})`);
  if (selection.length === image.channels && selection.every((c, k) => c === k)) return image;
  const plane = image.width * image.height;
  const data = new Float32Array(selection.length * plane);
  selection.forEach((c, k) => data.set(image.data.subarray(c * plane, (c + 1) * plane), k * plane));
  return { ...image, channels: selection.length, data };
}
