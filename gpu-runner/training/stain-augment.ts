// Stained-slide variants of a colour image, made before the image is read as the network reads it:
// the changes between labs and scanners that a histology model must shrug off.
// - Stain colour: Tellez et al. 2019 ("Quantifying the effects of data augmentation and stain
//   color normalization in convolutional neural networks for computational pathology") jitter the
//   haematoxylin, eosin and DAB amounts of each pixel. The amounts come from colour deconvolution
//   (Ruifrok & Johnston 2001): optical density OD = -ln((I + 1) / (max + 1)) per channel is a sum
//   of the three stains' OD vectors weighted by their amounts; each amount is scaled and shifted,
//   and the pixel is rebuilt from the new amounts.
// - Focus: a Gaussian blur (a scanner's focus drifts across a slide).
// - Compression: a real JPEG round trip at a random quality (most slide scanners store JPEG tiles).
// Each variant draws its changes from a seeded generator, so a run makes the same variants again.
//
// Numeric hot loops: every index is bounded by a loop over the array's own length (or width ×
// height, or a row's samples). The `!`s state that bound to noUncheckedIndexedAccess rather
// than check it again in the inner loop.
import jpeg from "jpeg-js";
import type { DecodedImage } from "../../common/decode/index.ts";
import type { ImageVariants } from "./labelled-images.ts";
import { SeededRandom } from "./random.ts";

interface StainVariantSettings {
  /** Each stain's amount is multiplied by a factor drawn from this range. */
  amountScale: [number, number];
  /** Then shifted by an OD (natural log) drawn from this range; DAB gets half of it (most H&E has none). */
  amountShift: [number, number];
  /** Chance of a Gaussian blur, and the range its sigma (pixels) is drawn from. */
  blurChance: number;
  blurSigma: [number, number];
  /** Chance of a JPEG round trip, and the range its quality is drawn from. */
  jpegChance: number;
  jpegQuality: [number, number];
}

/** Tellez et al.'s "HED-strong" range for the amounts, with focus and compression of everyday scanners. */
export const SLIDE_VARIANTS: StainVariantSettings = {
  amountScale: [0.75, 1.25],
  amountShift: [-0.15, 0.15],
  blurChance: 0.5,
  blurSigma: [0.4, 1.5],
  jpegChance: 0.5,
  jpegQuality: [35, 90],
};

/** Rows: the OD colour (R, G, B) of haematoxylin, eosin and DAB (Ruifrok & Johnston's measured vectors, each of unit length). */
const STAIN_OD = unitRows([
  [0.65, 0.7, 0.29],
  [0.07, 0.99, 0.11],
  [0.27, 0.57, 0.78],
]);
const OD_TO_STAINS = inverse3(STAIN_OD);

function unitRows(rows: number[][]): number[][] {
  return rows.map((row) => {
    const length = Math.hypot(...row);
    return row.map((v) => v / length);
  });
}

function inverse3(m: number[][]): number[][] {
  const [a, b, c] = m[0]!,
    [d, e, f] = m[1]!,
    [g, h, i] = m[2]!;
  const det = a! * (e! * i! - f! * h!) - b! * (d! * i! - f! * g!) + c! * (d! * h! - e! * g!);
  return [
    [(e! * i! - f! * h!) / det, (c! * h! - b! * i!) / det, (b! * f! - c! * e!) / det],
    [(f! * g! - d! * i!) / det, (a! * i! - c! * g!) / det, (c! * d! - a! * f!) / det],
    [(d! * h! - e! * g!) / det, (b! * g! - a! * h!) / det, (a! * e! - b! * d!) / det],
  ];
}

/** The largest value of the image's sample type (8-bit: 255). */
function fullScale(image: DecodedImage): number {
  return image.sampleFormat === "float" ? 1 : 2 ** Math.min(16, image.bitDepth) - 1;
}

// Exported for its tests only (test/training/labelled-images.test.ts, test/training/stain-augment.test.ts).
/** Each pixel's stain amounts scaled and shifted by one draw for the whole image. */
export function jitterStains(image: DecodedImage, scale: readonly number[], shift: readonly number[]): DecodedImage {
  if (image.channels < 3) throw new Error(`stain jitter needs an RGB image, this one has ${image.channels} channel(s)`);
  const plane = image.width * image.height;
  const top = fullScale(image);
  const data = new Float32Array(image.data);
  const od = [0, 0, 0];
  const amounts = [0, 0, 0];
  for (let p = 0; p < plane; p++) {
    for (let c = 0; c < 3; c++) od[c] = -Math.log((Math.max(0, image.data[c * plane + p]!) + 1) / (top + 1));
    for (let s = 0; s < 3; s++)
      amounts[s] = (od[0]! * OD_TO_STAINS[0]![s]! + od[1]! * OD_TO_STAINS[1]![s]! + od[2]! * OD_TO_STAINS[2]![s]!) * scale[s]! + shift[s]!;
    for (let c = 0; c < 3; c++) {
      const newOd = Math.max(0, amounts[0]! * STAIN_OD[0]![c]! + amounts[1]! * STAIN_OD[1]![c]! + amounts[2]! * STAIN_OD[2]![c]!);
      data[c * plane + p] = Math.min(top, (top + 1) * Math.exp(-newOd) - 1);
    }
  }
  return { ...image, data };
}

// Exported for its test only (test/training/stain-augment.test.ts).
/** A separable Gaussian blur of every channel (edges repeat their last pixel). */
export function gaussianBlur(image: DecodedImage, sigma: number): DecodedImage {
  const radius = Math.max(1, Math.ceil(3 * sigma));
  const kernel = new Float32Array(2 * radius + 1);
  let sum = 0;
  for (let k = -radius; k <= radius; k++) sum += kernel[k + radius] = Math.exp(-(k * k) / (2 * sigma * sigma));
  for (let k = 0; k < kernel.length; k++) kernel[k]! /= sum;
  const { width, height, channels } = image;
  const plane = width * height;
  const data = new Float32Array(image.data.length);
  const row = new Float32Array(Math.max(width, height));
  for (let c = 0; c < channels; c++) {
    const base = c * plane;
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        let v = 0;
        for (let k = -radius; k <= radius; k++) v += kernel[k + radius]! * image.data[base + y * width + Math.min(width - 1, Math.max(0, x + k))]!;
        row[x] = v;
      }
      data.set(row.subarray(0, width), base + y * width);
    }
    for (let x = 0; x < width; x++) {
      for (let y = 0; y < height; y++) {
        let v = 0;
        for (let k = -radius; k <= radius; k++) v += kernel[k + radius]! * data[base + Math.min(height - 1, Math.max(0, y + k)) * width + x]!;
        row[y] = v;
      }
      for (let y = 0; y < height; y++) data[base + y * width + x] = row[y]!;
    }
  }
  return { ...image, data };
}

// Exported for its test only (test/training/stain-augment.test.ts).
/** The image as a JPEG of this quality would give it back (8-bit RGB; other depths are scaled there and back). */
export function jpegRoundTrip(image: DecodedImage, quality: number): DecodedImage {
  const { width, height } = image;
  const plane = width * height;
  const top = fullScale(image);
  const rgba = new Uint8Array(4 * plane);
  for (let p = 0; p < plane; p++) {
    for (let c = 0; c < 3; c++) rgba[4 * p + c] = Math.round((255 * Math.min(top, Math.max(0, image.data[c * plane + p]!))) / top);
    rgba[4 * p + 3] = 255;
  }
  const encoded = jpeg.encode({ width, height, data: rgba }, Math.round(quality));
  const decoded = jpeg.decode(encoded.data, { useTArray: true, formatAsRGBA: true });
  const data = new Float32Array(image.data);
  for (let p = 0; p < plane; p++) for (let c = 0; c < 3; c++) data[c * plane + p] = (decoded.data[4 * p + c]! * top) / 255;
  return { ...image, data };
}

// Exported for its test only (test/training/stain-augment.test.ts).
/** One variant: stains always jittered, then blur and JPEG each by chance. */
export function slideVariant(image: DecodedImage, random: SeededRandom, settings: StainVariantSettings = SLIDE_VARIANTS): DecodedImage {
  const scale = [0, 1, 2].map(() => random.uniform(settings.amountScale[0], settings.amountScale[1]));
  const shift = [0, 1, 2].map((s) => random.uniform(settings.amountShift[0], settings.amountShift[1]) * (s === 2 ? 0.5 : 1));
  let variant = jitterStains(image, scale, shift);
  if (random.next() < settings.blurChance) variant = gaussianBlur(variant, random.uniform(settings.blurSigma[0], settings.blurSigma[1]));
  if (random.next() < settings.jpegChance) variant = jpegRoundTrip(variant, random.uniform(settings.jpegQuality[0], settings.jpegQuality[1]));
  return variant;
}

/**
 * Training copies of stained images (labelled-images.ts): image `id`'s k-th copy is drawn from a
 * generator of its own, so it does not depend on which images are read, nor in which order. The
 * train CLI's --slide-variants and fine-tuning on stained pairs (fine-tune-recipe.ts) make them alike.
 */
export function slideVariants(count: number, seed: number): ImageVariants {
  return { count, modality: "histology", make: (decoded, id, k) => slideVariant(decoded, new SeededRandom(seed + k * 7919 + idHash(id))) };
}

/** A stable number for an id (FNV-1a). */
function idHash(id: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193) >>> 0;
  return hash;
}
