// Reads a dataset laid out as <dir>/images/<name>.<ext> + <dir>/labels/<name>.png (the layout of
// shared/data/nuclei) into what the model reads (the engine's model input, modality included: one
// channel, or three for a colour model; network-input.ts) with instance labels. A dataset of several modalities lists them in
// <dir>/modality.csv (columns name, modality); its images are then grouped by modality as well as
// by set, for sampling and validation.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, extname, join } from "node:path";
import { decodeImage } from "../../common/decode/index.ts";
import type { DecodedImage } from "../../common/decode/index.ts";
import { modelInput } from "../engine/model-input.ts";
import type { Modality } from "../engine/modality.ts";
import { MODALITIES } from "../engine/modality.ts";
import type { ModelReads } from "../engine/model.ts";
import { ONE_CHANNEL } from "./network-input.ts";

export interface LabelledImage {
  /** "<set>/<name>", e.g. "bbbc039/IXMtest_A02_s1", or "<set>/<modality>/<name>" in a set of several modalities. */
  id: string;
  width: number;
  height: number;
  /** What the model reads (modality applied), planar [channels, H, W], raw intensities (normalisation happens later). */
  image: Float32Array;
  /** 1, or 3 for a colour model. */
  channels: number;
  labels: Uint32Array;
  /** The modality the engine detected, which made `image`. */
  modality: Modality;
}

/** The group an image is sampled and validated with: its id up to the last "/" (set, and modality where listed). */
export function setOfImage(id: string): string {
  return id.slice(0, Math.max(0, id.lastIndexOf("/")));
}

/** What a model that reads the modality (one channel, or colour) gets from a decoded image, as the engine makes it at inference (or for the modality given). */
export function toModelInput(
  decoded: DecodedImage,
  reads: ModelReads,
  given: Modality | "auto" = "auto",
): { data: Float32Array; channels: number; modality: Modality } {
  const { image, modality } = modelInput(decoded, reads, undefined, given);
  if (!modality) throw new Error(`the trainer reads images for one-channel or colour models, not for a model of ${reads.channels} plain channels`);
  return { data: image.data, channels: image.channels, modality: modality.modality };
}

export function labelsFromImage(decoded: DecodedImage): Uint32Array {
  if (decoded.channels !== 1) throw new Error(`a label image must have one channel, found ${decoded.channels}`);
  const labels = new Uint32Array(decoded.width * decoded.height);
  for (let i = 0; i < labels.length; i++) {
    const v = decoded.data[i];
    if (v === undefined || !(v >= 0) || v !== Math.floor(v)) throw new Error(`label value ${v} is not a non-negative integer`);
    labels[i] = v;
  }
  return labels;
}

/**
 * Extra training copies of some images, each changed by `make` (training/stain-augment.ts) before
 * it is read as the network reads it. A copy's id is its image's id and "~k"; it is read for its
 * image's modality, so a changed colour never changes how it is read.
 */
export interface ImageVariants {
  count: number;
  /** Only images the engine reads as this modality get copies. */
  modality: Modality;
  make(decoded: DecodedImage, id: string, k: number): DecodedImage;
}

/** The id of the image a variant was made from (an image's own id for an image). */
export function variantSource(id: string): string {
  const mark = id.lastIndexOf("~");
  return mark < 0 ? id : id.slice(0, mark);
}

export function pairImageWithLabels(
  id: string,
  imageBytes: Uint8Array,
  labelBytes: Uint8Array,
  reads: ModelReads = ONE_CHANNEL,
  variants?: ImageVariants,
): LabelledImage[] {
  const decoded = decodeImage(imageBytes);
  const labelImage = decodeImage(labelBytes);
  if (labelImage.width !== decoded.width || labelImage.height !== decoded.height) {
    throw new Error(`${id}: labels are ${labelImage.width}x${labelImage.height}, the image ${decoded.width}x${decoded.height}`);
  }
  const labels = labelsFromImage(labelImage);
  const { data, channels, modality } = toModelInput(decoded, reads);
  const pair: LabelledImage = { id, width: decoded.width, height: decoded.height, image: data, channels, labels, modality };
  const copies = variants
    ? Array.from({ length: variantCount(variants, modality, decoded.channels) }, (_, k) => labelledVariant(pair, decoded, reads, variants, k + 1))
    : [];
  return [pair, ...copies];
}

/** How many variants an image gets: those of the variants' modality, in colour (a stain needs its colours), get them all. */
export function variantCount(variants: ImageVariants, modality: Modality, imageChannels: number): number {
  return modality === variants.modality && imageChannels >= 3 ? variants.count : 0;
}

/** Variant k (from 1) of a labelled image, made from its decoded image and read for the image's own modality. */
export function labelledVariant(pair: LabelledImage, decoded: DecodedImage, reads: ModelReads, variants: ImageVariants, k: number): LabelledImage {
  const variant = toModelInput(variants.make(decoded, pair.id, k), reads, pair.modality);
  return { ...pair, id: `${pair.id}~${k}`, image: variant.data };
}

/** Every image in <dir>/images that has a label image in <dir>/labels, sorted by name, as a model that reads `reads` gets it (with its variants, if asked). */
export function readLabelledDirectory(dir: string, reads: ModelReads = ONE_CHANNEL, variants?: ImageVariants): LabelledImage[] {
  const set = basename(dir.replace(/\/+$/, ""));
  const labelNames = new Set(readdirSync(join(dir, "labels")));
  const listed = listedModalities(dir);
  const pairs: LabelledImage[] = [];
  for (const file of readdirSync(join(dir, "images")).sort()) {
    const name = basename(file, extname(file));
    if (!labelNames.has(`${name}.png`)) continue;
    const group = listed ? `${set}/${listed.get(name) ?? "unlisted"}` : set;
    pairs.push(
      ...pairImageWithLabels(`${group}/${name}`, readFileSync(join(dir, "images", file)), readFileSync(join(dir, "labels", `${name}.png`)), reads, variants),
    );
  }
  if (pairs.length === 0) throw new Error(`no image/label pairs under ${dir} (expected images/<name>.* and labels/<name>.png)`);
  return pairs;
}

/** <dir>/modality.csv as name -> modality, or undefined when the set has none. */
export function listedModalities(dir: string): Map<string, Modality> | undefined {
  const path = join(dir, "modality.csv");
  if (!existsSync(path)) return undefined;
  const [header, ...rows] = readFileSync(path, "utf8").trim().split(/\r?\n/);
  const columns = header!.split(",");
  const nameAt = columns.indexOf("name"),
    modalityAt = columns.indexOf("modality");
  if (nameAt < 0 || modalityAt < 0) throw new Error(`${path} needs the columns name and modality`);
  const listed = new Map<string, Modality>();
  for (const row of rows) {
    const cells = row.split(",");
    const modality = cells[modalityAt] as Modality;
    if (!MODALITIES.includes(modality)) throw new Error(`${path}: unknown modality "${cells[modalityAt]}" for ${cells[nameAt]}`);
    listed.set(cells[nameAt]!, modality);
  }
  return listed;
}
