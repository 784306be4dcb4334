// What kind of microscopy an image is, decided from its pixels: fluorescence (light emitted on a
// dark field), brightfield (light through a bright field) or stained histology (stains absorbing
// light). The one decision the runner's engine, the command-line tools, the preview and the client
// all make (gpu-runner/engine/modality.ts makes the model's input from it; the client picks the
// public model for it, schema/model-recommendations.ts).
import type { Modality } from "../schema/modality.ts";
import type { DecodedImage } from "./decode/index.ts";
import { cutRegion, type ImageRegions } from "./decode/region.ts";

/**
 * A colour image has colour when a tenth of its pixels have a saturation, (max - min) / max over
 * R, G, B, above this. Gray images stored as RGB have none; on the dsb2018 histology images the
 * 90th percentile is 0.08 to 0.95, on TNBC's H&E 0.05 to 0.38.
 */
const COLOURED_SATURATION = 0.04;
/**
 * Where the background lies: the median's position between the 0.1 and 99.9 percentiles. In
 * fluorescence the background is dark and the median near the bottom (at most 0.19 on dsb2018
 * fluorescence, 0.34 on Kromp, 0.60 on a nearly empty BBBC039 field); in brightfield it is near the
 * top (at least 0.86 on dsb2018 brightfield). Inverting a fluorescence image ruins it, so a gray
 * image must be clearly bright.
 */
const BRIGHT_FIELD_POSITION = 0.7;
/**
 * How a coloured image made its colour. Stains absorb light: glass is bright and colourless, and
 * the more stain a pixel holds, the darker and more coloured it is, so brightness and chroma (max -
 * min over R, G, B) correlate negatively (dsb2018 histology -0.99 to -0.86, TNBC -0.92 to -0.55).
 * Fluorescence emits light: the background is black and colourless, and the brighter a pixel, the
 * more of its dye's colour it has, so they correlate positively (a DAPI-blue RGB, a multi-colour
 * composite). Tissue packed with nuclei and no glass can correlate either way (pale pink cytoplasm
 * is as coloured as dark purple nuclei), but light still passes through every pixel: the tenth
 * percentile of each pixel's brightest channel is at least 0.48 of full scale on the darkest
 * 128-px window of each of the 144 dsb2018 and TNBC histology images, where fluorescence has its
 * black background.
 */
const ABSORBING_CORRELATION = -0.2;
const EMITTING_CORRELATION = 0.2;
const LIT_EVERYWHERE = 0.25;

/** Pixels read to decide: a regular subsample keeps detection cheap on gigapixel images. */
const SAMPLE_PIXELS = 1 << 16;

/** The modality, and in words what in the pixels decided it; `sure` is false where the measures sit between their bounds. */
export interface ModalityReading {
  modality: Modality;
  reason: string;
  sure: boolean;
}

/** Decides the modality from the pixels: whether the image has colour and how its colour arises (absorbed or emitted), else where the background lies. */
export function readModality(image: DecodedImage): ModalityReading {
  const plane = image.width * image.height;
  const stride = Math.max(1, Math.floor(plane / SAMPLE_PIXELS));
  const count = Math.ceil(plane / stride);
  const gray = new Float32Array(count);
  const chroma = new Float32Array(count);
  const saturation = new Float32Array(count);
  const brightest = new Float32Array(count);
  const colour = image.channels >= 3;
  for (let k = 0, i = 0; i < plane; i += stride, k++) {
    if (colour) {
      const r = image.data[i]!,
        g = image.data[plane + i]!,
        b = image.data[2 * plane + i]!;
      const max = Math.max(r, g, b),
        min = Math.min(r, g, b);
      chroma[k] = max - min;
      brightest[k] = max;
      saturation[k] = max > 0 ? (max - min) / max : 0;
      gray[k] = (r + g + b) / 3;
    } else {
      let sum = 0;
      for (let c = 0; c < image.channels; c++) sum += image.data[c * plane + i]!;
      gray[k] = sum / image.channels;
    }
  }
  const correlation = colour ? pearson(gray, chroma) : 0;
  gray.sort();
  saturation.sort();
  brightest.sort();
  const quantile = (values: Float32Array, q: number) => values[Math.min(count - 1, Math.floor(q * (count - 1)))]!;
  const low = quantile(gray, 0.001),
    high = quantile(gray, 0.999);
  if (!(high > low)) return { modality: "fluorescence", reason: "the image is flat: nothing to invert", sure: true };
  const position = (quantile(gray, 0.5) - low) / (high - low);
  const where = `background at ${position.toFixed(2)} of the intensity range`;
  if (colour && quantile(saturation, 0.9) > COLOURED_SATURATION) {
    const how = `colour and brightness correlate at ${correlation.toFixed(2)}`;
    const lit = quantile(brightest, 0.1) / fullScale(image);
    if (correlation <= ABSORBING_CORRELATION) return { modality: "histology", reason: `stained: ${how} (darker pixels hold more colour)`, sure: true };
    if (lit >= LIT_EVERYWHERE) {
      const passes = `light passes everywhere (the darkest tenth of pixels at ${lit.toFixed(2)} of full scale)`;
      if (correlation >= EMITTING_CORRELATION && position > BRIGHT_FIELD_POSITION)
        return { modality: "brightfield", reason: `a tinted bright field: ${passes}, ${how}, ${where}`, sure: true };
      return { modality: "histology", reason: `stained tissue: ${passes}, ${how}`, sure: true };
    }
    if (correlation >= EMITTING_CORRELATION) return { modality: "fluorescence", reason: `emitted colour on a dark background: ${how}`, sure: true };
    return { modality: "fluorescence", reason: `probably emitted colour: a dark background, ${how}`, sure: false };
  }
  if (position > BRIGHT_FIELD_POSITION) return { modality: "brightfield", reason: `a bright field: ${where}`, sure: true };
  return { modality: "fluorescence", reason: `a dark field: ${where}`, sure: position < BRIGHT_FIELD_POSITION * 0.9 };
}

// Exported for its test only (test/engine/modality.test.ts).
/** The modality alone (readModality's). */
export function detectModality(image: DecodedImage): Modality {
  return readModality(image).modality;
}

/** The largest value of the image's samples: 255 for 8 bits, 1 for floating point. */
function fullScale(image: DecodedImage): number {
  return image.sampleFormat === "float" ? 1 : 2 ** image.bitDepth - 1;
}

function pearson(a: Float32Array, b: Float32Array): number {
  const n = a.length;
  let meanA = 0,
    meanB = 0;
  for (let i = 0; i < n; i++) {
    meanA += a[i]! / n;
    meanB += b[i]! / n;
  }
  let covariance = 0,
    varianceA = 0,
    varianceB = 0;
  for (let i = 0; i < n; i++) {
    const da = a[i]! - meanA,
      db = b[i]! - meanB;
    covariance += da * db;
    varianceA += da * da;
    varianceB += db * db;
  }
  return varianceA > 0 && varianceB > 0 ? covariance / Math.sqrt(varianceA * varianceB) : 0;
}

/** A grid of square windows spread evenly over the image (overlapping where it is small): 16 windows of 512², 4 MP sampled. */
export function sampleWindows(width: number, height: number, grid = 4, side = 512): { x: number; y: number; width: number; height: number }[] {
  const w = Math.min(side, width);
  const h = Math.min(side, height);
  const at = (length: number, size: number, i: number) => (grid === 1 ? Math.floor((length - size) / 2) : Math.round(((length - size) * i) / (grid - 1)));
  const windows = [];
  for (let gy = 0; gy < grid; gy++) for (let gx = 0; gx < grid; gx++) windows.push({ x: at(width, w, gx), y: at(height, h, gy), width: w, height: h });
  return windows;
}

/** The windows of equal height placed left to right in one planar image. */
function sideBySide(images: DecodedImage[]): DecodedImage {
  const height = images[0]!.height;
  const channels = images[0]!.channels;
  const width = images.reduce((sum, image) => sum + image.width, 0);
  const data = new Float32Array(channels * width * height);
  let left = 0;
  for (const image of images) {
    for (let c = 0; c < channels; c++)
      for (let y = 0; y < height; y++) {
        const from = (c * height + y) * image.width;
        data.set(image.data.subarray(from, from + image.width), (c * height + y) * width + left);
      }
    left += image.width;
  }
  return { ...images[0]!, width, height, data };
}

/** The sample windows of an image read a region at a time, side by side: what the modality (and a whole slide's normalisation) is measured on. */
export async function readSample(
  source: Pick<ImageRegions, "width" | "height" | "readRegion">,
  windows = sampleWindows(source.width, source.height),
): Promise<DecodedImage> {
  const samples: DecodedImage[] = [];
  const left = Math.min(...windows.map((w) => w.x));
  const top = Math.min(...windows.map((w) => w.y));
  const right = Math.max(...windows.map((w) => w.x + w.width));
  const bottom = Math.max(...windows.map((w) => w.y + w.height));
  if ((right - left) * (bottom - top) <= windows.reduce((sum, w) => sum + w.width * w.height, 0)) {
    // Windows that overlap (a small image) are cut from one read of their union: read one by one, a
    // tiled file's tiles under the overlaps would be fetched and decoded again for each.
    const union = await source.readRegion(left, top, right - left, bottom - top);
    const all = Array.from({ length: union.channels }, (_, c) => c);
    for (const w of windows) samples.push(cutRegion(union, w.x - left, w.y - top, w.width, w.height, all));
  } else {
    for (const window of windows) samples.push(await source.readRegion(window.x, window.y, window.width, window.height));
  }
  return sideBySide(samples);
}

/** The modality of an image read a region at a time, decided on its sample windows (never the whole image). */
export async function readModalityOfRegions(source: Pick<ImageRegions, "width" | "height" | "readRegion">): Promise<ModalityReading> {
  return readModality(await readSample(source));
}
