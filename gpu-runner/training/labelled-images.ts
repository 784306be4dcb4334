// Reads a dataset laid out as <dir>/images/<name>.<ext> + <dir>/labels/<name>.png (the layout of
// shared/data/nuclei) into single-channel images with instance labels.
import { readdirSync, readFileSync } from "node:fs";
import { basename, extname, join } from "node:path";
import { decodeImage } from "../engine/decode/index.ts";
import type { DecodedImage } from "../engine/decode/index.ts";

export interface LabelledImage {
  /** "<set>/<name>", e.g. "bbbc039/IXMtest_A02_s1". */
  id: string;
  width: number;
  height: number;
  /** One channel, raw intensities (normalisation happens later). */
  image: Float32Array;
  labels: Uint32Array;
}

/** The set an image belongs to: the part of its id before the first "/". */
export function setOfImage(id: string): string {
  return id.split("/")[0];
}

/** Nuclei images come as gray or as RGB renderings; the model sees their channel mean. */
export function toSingleChannel(decoded: DecodedImage): Float32Array {
  const plane = decoded.width * decoded.height;
  if (decoded.channels === 1) return decoded.data;
  const gray = new Float32Array(plane);
  for (let c = 0; c < decoded.channels; c++) {
    for (let i = 0; i < plane; i++) gray[i] += decoded.data[c * plane + i];
  }
  for (let i = 0; i < plane; i++) gray[i] /= decoded.channels;
  return gray;
}

export function labelsFromImage(decoded: DecodedImage): Uint32Array {
  if (decoded.channels !== 1) throw new Error(`a label image must have one channel, found ${decoded.channels}`);
  const labels = new Uint32Array(decoded.width * decoded.height);
  for (let i = 0; i < labels.length; i++) {
    const v = decoded.data[i];
    if (!(v >= 0) || v !== Math.floor(v)) throw new Error(`label value ${v} is not a non-negative integer`);
    labels[i] = v;
  }
  return labels;
}

export function pairImageWithLabels(id: string, imageBytes: Uint8Array, labelBytes: Uint8Array): LabelledImage {
  const decoded = decodeImage(imageBytes);
  const labelImage = decodeImage(labelBytes);
  if (labelImage.width !== decoded.width || labelImage.height !== decoded.height) {
    throw new Error(`${id}: labels are ${labelImage.width}x${labelImage.height}, the image ${decoded.width}x${decoded.height}`);
  }
  return { id, width: decoded.width, height: decoded.height, image: toSingleChannel(decoded), labels: labelsFromImage(labelImage) };
}

/** Every image in <dir>/images that has a label image in <dir>/labels, sorted by name. */
export function readLabelledDirectory(dir: string): LabelledImage[] {
  const set = basename(dir.replace(/\/+$/, ""));
  const labelNames = new Set(readdirSync(join(dir, "labels")));
  const pairs: LabelledImage[] = [];
  for (const file of readdirSync(join(dir, "images")).sort()) {
    const name = basename(file, extname(file));
    if (!labelNames.has(`${name}.png`)) continue;
    pairs.push(pairImageWithLabels(`${set}/${name}`, readFileSync(join(dir, "images", file)), readFileSync(join(dir, "labels", `${name}.png`))));
  }
  if (pairs.length === 0) throw new Error(`no image/label pairs under ${dir} (expected images/<name>.* and labels/<name>.png)`);
  return pairs;
}
