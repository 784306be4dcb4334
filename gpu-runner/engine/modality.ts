// What kind of microscopy an image is, and the one channel a nuclei model reads from it: bright
// nuclei on a dark background, whatever the modality.
// - fluorescence: the channel mean, as it is (Cellpose's grayscale mode).
// - brightfield: the channel mean inverted (Cellpose's `invert`), so dark nuclei on a bright field
//   look like a nuclear stain.
// - histology (H&E-like stains): the haematoxylin optical density from colour deconvolution
//   (Ruifrok & Johnston, "Quantification of histochemical staining by color deconvolution", Anal.
//   Quant. Cytol. Histol. 2001; the stain vectors are the paper's, as in scikit-image's rgb2hed).
//   Haematoxylin binds to nuclei, so its density is high on nuclei and near zero on the background.
import type { Modality } from "../../schema/modality.ts";
import type { DecodedImage } from "./decode/index.ts";

export { MODALITIES } from "../../schema/modality.ts";
export type { Modality, ModalityDecision } from "../../schema/modality.ts";

/**
 * A colour image is stained when a tenth of its pixels have a saturation, (max - min) / max over
 * R, G, B, above this. Gray images stored as RGB have none; on the dsb2018 histology images the
 * 90th percentile is 0.08 to 0.95.
 */
const STAINED_SATURATION = 0.04;
/**
 * Where the background lies: the median's position between the 0.1 and 99.9 percentiles. In
 * fluorescence the background is dark and the median near the bottom (at most 0.19 on dsb2018
 * fluorescence, 0.34 on Kromp, 0.60 on a nearly empty BBBC039 field); in brightfield it is near the
 * top (at least 0.86 on dsb2018 brightfield). Inverting a fluorescence image ruins it, so a gray
 * image must be clearly bright; a stained colour image absorbs light by nature and needs less
 * (dsb2018 histology: 0.50 to 0.95).
 */
const BRIGHT_FIELD_POSITION = 0.7;
const STAINED_BRIGHT_FIELD_POSITION = 0.4;

/** Pixels read to decide: a regular subsample keeps detection cheap on gigapixel images. */
const SAMPLE_PIXELS = 1 << 16;

/** Decides the modality from the pixels: where the background lies, then whether it is stained. */
export function detectModality(image: DecodedImage): Modality {
  const plane = image.width * image.height;
  const stride = Math.max(1, Math.floor(plane / SAMPLE_PIXELS));
  const count = Math.ceil(plane / stride);
  const gray = new Float32Array(count);
  const saturation = new Float32Array(count);
  const colour = image.channels >= 3;
  for (let k = 0, i = 0; i < plane; i += stride, k++) {
    if (colour) {
      const r = image.data[i]!, g = image.data[plane + i]!, b = image.data[2 * plane + i]!;
      const max = Math.max(r, g, b), min = Math.min(r, g, b);
      saturation[k] = max > 0 ? (max - min) / max : 0;
      gray[k] = (r + g + b) / 3;
    } else {
      let sum = 0;
      for (let c = 0; c < image.channels; c++) sum += image.data[c * plane + i]!;
      gray[k] = sum / image.channels;
    }
  }
  gray.sort();
  saturation.sort();
  const quantile = (values: Float32Array, q: number) => values[Math.min(count - 1, Math.floor(q * (count - 1)))]!;
  const low = quantile(gray, 0.001), high = quantile(gray, 0.999);
  if (!(high > low)) return "fluorescence";
  const position = (quantile(gray, 0.5) - low) / (high - low);
  const stained = colour && quantile(saturation, 0.9) > STAINED_SATURATION;
  if (stained && position > STAINED_BRIGHT_FIELD_POSITION) return "histology";
  if (position > BRIGHT_FIELD_POSITION) return "brightfield";
  return "fluorescence";
}

// Ruifrok & Johnston's stain optical-density vectors (rows: haematoxylin, eosin, DAB; columns R, G, B).
const STAIN_VECTORS = [
  [0.65, 0.7, 0.29],
  [0.07, 0.99, 0.11],
  [0.27, 0.57, 0.78],
];

/** The column of the inverse stain matrix that turns an RGB optical density into haematoxylin density. */
const HAEMATOXYLIN_FROM_OD = inverse3(STAIN_VECTORS.map(unit)).map((row) => row[0]!);

/**
 * The one channel a one-channel nuclei model reads: see the file comment. `image` has the
 * channels the caller selected (histology needs three: R, G, B).
 */
export function modalityChannel(image: DecodedImage, modality: Modality): Float32Array {
  const plane = image.width * image.height;
  if (modality === "histology") return haematoxylinDensity(image);
  const out = new Float32Array(plane);
  for (let c = 0; c < image.channels; c++) for (let i = 0; i < plane; i++) out[i]! += image.data[c * plane + i]! / image.channels;
  if (modality === "brightfield") {
    let max = -Infinity;
    for (let i = 0; i < plane; i++) if (out[i]! > max) max = out[i]!;
    for (let i = 0; i < plane; i++) out[i] = max - out[i]!;
  }
  return out;
}

function haematoxylinDensity(image: DecodedImage): Float32Array {
  if (image.channels < 3) throw new Error(`histology (colour deconvolution) needs an RGB image, this one has ${image.channels} channel${image.channels === 1 ? "" : "s"}`);
  const plane = image.width * image.height;
  // Transmitted light: full scale is the brightest value the sample format can hold.
  const fullScale = image.sampleFormat === "float" ? maxOf(image.data.subarray(0, 3 * plane)) : 2 ** image.bitDepth - 1;
  const out = new Float32Array(plane);
  const [wr, wg, wb] = HAEMATOXYLIN_FROM_OD as [number, number, number];
  // -log10 of the transmitted fraction; +1 keeps black pixels finite, as scikit-image does.
  const od = (v: number) => -Math.log10((Math.max(0, v) + 1) / (fullScale + 1));
  for (let i = 0; i < plane; i++) {
    const h = wr * od(image.data[i]!) + wg * od(image.data[plane + i]!) + wb * od(image.data[2 * plane + i]!);
    out[i] = h > 0 ? h : 0;
  }
  return out;
}

function maxOf(values: Float32Array): number {
  let max = 0;
  for (let i = 0; i < values.length; i++) if (values[i]! > max) max = values[i]!;
  return max > 0 ? max : 1;
}

function unit(v: number[]): number[] {
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

/** Inverse of a 3×3 matrix by cofactors. */
function inverse3(m: number[][]): number[][] {
  const [a, b, c] = m[0]!, [d, e, f] = m[1]!, [g, h, i] = m[2]!;
  const cof = [
    [e * i - f * h, -(d * i - f * g), d * h - e * g],
    [-(b * i - c * h), a * i - c * g, -(a * h - b * g)],
    [b * f - c * e, -(a * f - c * d), a * e - b * d],
  ];
  const det = a! * cof[0]![0]! + b! * cof[0]![1]! + c! * cof[0]![2]!;
  // inverse = transpose(cofactors) / det
  return [0, 1, 2].map((r) => [0, 1, 2].map((col) => cof[col]![r]! / det));
}
