// Turns a labelled image into what the crop sampler reads: percentile-normalised intensities, each
// channel on its own (the engine's normalisation, as at inference), the engine's flow targets, the foreground mask, and
// the scale that brings its objects to the model's diameter.
import { flowsFromLabelsInThread } from "../engine/compute-thread/compute-thread.ts";
import { flowsFromLabels } from "../engine/flow-targets.ts";
import { normalizeImage } from "../engine/normalize.ts";
import type { PreparedImage } from "./augment.ts";
import { setOfImage } from "./labelled-images.ts";
import type { LabelledImage } from "./labelled-images.ts";
import { medianObjectDiameter } from "../engine/object-diameter.ts";
import { InputError } from "../engine/faults.ts";

/** objectDiameter: measured from the labels unless given (images without objects need it). */
function prepareImage(pair: LabelledImage, modelDiameter: number, objectDiameter = medianObjectDiameter(pair.labels)): PreparedImage {
  checkObjectDiameter(pair, objectDiameter);
  return withFlows(pair, modelDiameter, objectDiameter, flowsFromLabels(pair.labels, pair.width, pair.height));
}

/**
 * prepareImage with the flow targets (the costly part: heat diffusion in every mask) made in a
 * compute thread, so a runner's main loop keeps its heartbeats and time limit; `signal` stops it.
 */
export async function prepareImageInThread(pair: LabelledImage, modelDiameter: number, objectDiameter: number, signal?: AbortSignal): Promise<PreparedImage> {
  checkObjectDiameter(pair, objectDiameter);
  return withFlows(pair, modelDiameter, objectDiameter, await flowsFromLabelsInThread(pair.labels, pair.width, pair.height, signal));
}

function checkObjectDiameter(pair: LabelledImage, objectDiameter: number): void {
  if (!(objectDiameter > 0)) throw new InputError(`${pair.id}: the label image has no objects, so its object size is unknown`);
}

function withFlows(pair: LabelledImage, modelDiameter: number, diameter: number, flows: Float32Array): PreparedImage {
  const { width, height } = pair;
  const { channels } = pair;
  const image = normalizeImage({ width, height, channels, bitDepth: 32, sampleFormat: "float", data: pair.image });
  const foreground = new Uint8Array(width * height);
  for (let i = 0; i < foreground.length; i++) foreground[i] = pair.labels[i] !== 0 ? 1 : 0;
  return {
    id: pair.id,
    width,
    height,
    channels,
    image,
    flows,
    foreground,
    scaleToModel: modelDiameter / diameter,
  };
}

/**
 * Each image's object diameter for preparing it: the one measured from its labels, or for an image
 * without objects (a useful negative example) the median of the other images of its set.
 */
export function preparingDiameters(ids: readonly string[], measured: readonly number[]): number[] {
  return ids.map((id, i) => {
    if (measured[i]! > 0) return measured[i]!;
    const others = measured.filter((d, j) => d > 0 && setOfImage(ids[j]!) === setOfImage(id)).sort((a, b) => a - b);
    if (others.length === 0) throw new InputError(`${id}: no objects in it or in any other image of its set, so its object size is unknown`);
    return others[others.length >> 1]!;
  });
}

/** Prepares many images held in memory (the train CLI's data sets). */
export function prepareImages(pairs: LabelledImage[], modelDiameter: number): PreparedImage[] {
  const diameters = preparingDiameters(
    pairs.map((p) => p.id),
    pairs.map((p) => medianObjectDiameter(p.labels)),
  );
  return pairs.map((pair, i) => prepareImage(pair, modelDiameter, diameters[i]));
}
