// Validation AP on held-out images through the real engine (segmentImage: tiling, flow following,
// masks), Cellpose-style: each image is segmented at its true object diameter, as Cellpose's
// benchmarks do, so the score measures the network rather than a size estimate.
import { averagePrecision } from "../../common/scoring/average-precision.ts";
import type { DecodedImage } from "../../common/decode/index.ts";
import { loadModelFromBytes } from "../engine/model.ts";
import type { LoadedModel, ModelManifest } from "../engine/model.ts";
import { segmentImage } from "../engine/segment.ts";
import { setOfImage } from "./labelled-images.ts";
import type { LabelledImage } from "./labelled-images.ts";
import { heldOutTiles, TILE_DIAMETERS } from "./held-out-tiles.ts";
import type { ImageTiles } from "./held-out-tiles.ts";
import { exportModel } from "./model-export.ts";
import { medianObjectDiameter } from "../engine/object-diameter.ts";
import type { ApBySet, ValidationScores } from "./train-loop.ts";
import type { TrainingConfig } from "./training-config.ts";

/** A held-out image: read for each validation (fine-tuning reads it from disk then, within its memory budget). */
export interface ValidationImage {
  id: string;
  diameter: number;
  load(): LabelledImage | Promise<LabelledImage>;
}

/** Held-out images with objects (AP is undefined on an empty truth), all held in memory. */
export function validationImages(pairs: LabelledImage[]): ValidationImage[] {
  return pairs.map((pair) => ({ id: pair.id, diameter: medianObjectDiameter(pair.labels), load: () => pair })).filter((v) => v.diameter > 0);
}

/** The first `perSet` images of each set: a cheaper sample for validation during training. */
export function validationSample(images: ValidationImage[], perSet: number): ValidationImage[] {
  const taken = new Map<string, number>();
  return images.filter(({ id }) => {
    const set = setOfImage(id);
    const count = taken.get(set) ?? 0;
    taken.set(set, count + 1);
    return count < perSet;
  });
}

/**
 * These weights as the engine serves them, with the mask defaults given (none: Cellpose's), for
 * images that are already what the model reads (labelled-images.ts, modality applied): the engine
 * takes them unchanged and applies each image's modality to the rest (segment.ts, `preparedFor`).
 */
async function modelForPreparedInput(
  config: TrainingConfig,
  params: Float32Array,
  served: Pick<ModelManifest, "trainedObjectDiameter" | "maskDefaults"> = {},
): Promise<LoadedModel> {
  const { onnx, manifest } = exportModel(config, params, "validation", "validation", { source: "validation during training" });
  return loadModelFromBytes(onnx, { ...manifest, ...served }, { executionProvider: "cpu", log: () => {} });
}

function preparedInput(pair: LabelledImage): DecodedImage {
  return { width: pair.width, height: pair.height, channels: pair.channels, bitDepth: 32, sampleFormat: "float", data: pair.image };
}

/**
 * AP@0.5 and AP@0.75 averaged over the images of each set, plus "mean": the mean over sets; and
 * each image's AP@0.5 counts in tiles of TILE_DIAMETERS of its objects' diameter, for the guard.
 */
export async function validationAp(config: TrainingConfig, params: Float32Array, images: ValidationImage[]): Promise<ValidationScores> {
  const model = await modelForPreparedInput(config, params);
  const perSet = new Map<string, [number, number][]>();
  const tiles: ImageTiles[] = [];
  for (const { load, diameter } of images) {
    const pair = await load();
    const result = await segmentImage(preparedInput(pair), model, { diameter }, { preparedFor: pair.modality });
    const set = setOfImage(pair.id);
    // One AP per threshold asked for.
    const [ap50, ap75] = averagePrecision(pair.labels, result.labels, [0.5, 0.75]).ap;
    perSet.set(set, [...(perSet.get(set) ?? []), [ap50!, ap75!]]);
    tiles.push(heldOutTiles(pair.labels, result.labels, pair.width, TILE_DIAMETERS * diameter));
  }
  await model.session.release();
  return { ap50: meansBySet(perSet, 0), ap75: meansBySet(perSet, 1), tiles };
}

function meansBySet(perSet: Map<string, [number, number][]>, threshold: 0 | 1): ApBySet {
  const means: Record<string, number> = {};
  for (const [set, scores] of perSet) means[set] = scores.reduce((sum, s) => sum + s[threshold], 0) / scores.length;
  const sets = Object.values(means);
  return { ...means, mean: sets.length ? sets.reduce((a, b) => a + b, 0) / sets.length : 0 };
}

/**
 * Mean AP@0.5 over the images segmented as a user's request without a diameter would be ("auto"),
 * by these weights with the served model's mask defaults, with or without the training objects'
 * size in the manifest (engine/README.md, "Automatic diameter"): what fine-tuning checks before it
 * gives its model that size. Each image's own modality picks the estimate, as in the service
 * (blob counting on brightfield).
 */
export async function autoDiameterAp(
  config: TrainingConfig,
  params: Float32Array,
  images: ValidationImage[],
  served: Pick<ModelManifest, "trainedObjectDiameter" | "maskDefaults">,
): Promise<number> {
  const model = await modelForPreparedInput(config, params, served);
  let sum = 0;
  for (const { load } of images) {
    const pair = await load();
    const result = await segmentImage(preparedInput(pair), model, { diameter: "auto" }, { preparedFor: pair.modality });
    sum += averagePrecision(pair.labels, result.labels, [0.5]).ap[0]!;
  }
  await model.session.release();
  return images.length ? sum / images.length : 0;
}
