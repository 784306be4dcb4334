// Automatic object-size estimation for requests that give no diameter.
//
// A first guess from image statistics alone (no network): the scale of maximal scale-normalised
// Laplacian-of-Gaussian response over the bright foreground (Lindeberg's blob scale selection,
// "Feature detection with automatic scale selection", IJCV 1998). A bright disc of radius r gives
// its strongest normalised response −σ²∇²(G_σ * I) at its centre for σ = r/√2; averaged over the
// foreground the peak sits at a fixed multiple of that, calibrated below on discs. Large scales are
// computed on box-downsampled copies so every scale costs about the same small number of
// operations per downsampled pixel, and the whole estimate is a fraction of one network pass.
//
// On brightfield (inverted) the foreground average fails: the illumination profile and the texture
// of the field fill the Otsu foreground, and their edges' area-averaged response grows with scale,
// so the curve rises to the largest scale (8x the nuclei on dsb2018 brightfield training images).
// There the estimate counts blobs instead: the strong scale-space maxima of the response (Lindeberg's
// blob detection), summed per scale, so a few illumination bumps weigh little against hundreds of
// nuclei and no area grows with scale.
//
// The refinement after a network pass (segment.ts) uses Cellpose's own size measure on the masks
// (median equivalent diameter, as Cellpose 1–3's SizeModel refinement, Stringer et al. 2021).
//
// Numeric hot loops: every index is bounded by a loop over the array's own length (or width ×
// height, or a row's samples). The `!`s state that bound to noUncheckedIndexedAccess rather
// than check it again in the inner loop.

/** Candidate diameters grow by this factor; the peak is refined by parabolic interpolation. */
const SCALE_STEP = 2 ** (1 / 6);
/** Smallest diameter looked for (px); smaller objects are below what the network can resolve anyway. */
export const MIN_ESTIMATED_DIAMETER = 6;
/** Work on at most this many pixels: larger images are box-downsampled first (objects stay ≥ MIN size). */
const MAX_WORKING_PIXELS = 2 ** 20;
/** Gaussian σ in (downsampled) pixels is kept at least this, so the discrete Laplacian stays accurate. */
const MIN_SIGMA_PX = 2;
/**
 * Foreground-averaged response peaks at σ = CALIBRATION · r for discs of radius r (found by
 * measuring discs of radius 4–60 px; see test/engine/diameter.test.ts), so diameter = 2σ/CALIBRATION.
 */
const CALIBRATION = 0.62;
/**
 * Counting blobs, the response at a disc's centre peaks at σ = r/√2 (Lindeberg 1998), so
 * diameter = 2√2 σ; no area average shifts it.
 */
const BLOB_CALIBRATION = Math.SQRT1_2;
/**
 * Counted blobs respond at least this fraction of the strongest blobs' response (the
 * BLOB_STRONGEST_QUANTILE of all scale-space maxima). Edges make scale-space maxima too, at every
 * scale (a point at distance x inside an edge peaks at σ ≈ x), but at most a third of a blob
 * centre's response; texture and noise make many weak ones at small scales. With 0.7 of the 99th
 * percentile discs of radius 5–40 px come out at 0.83–0.93 of their diameter, and the 13 dsb2018
 * brightfield training images at 0.86–2.09 (median 1.19); 0.5 of the 95th percentile let rims
 * through on discs (0.13 for radius 40) and gave 0.51–1.48 on those images.
 */
const BLOB_RELATIVE_RESPONSE = 0.7;
const BLOB_STRONGEST_QUANTILE = 0.99;
/** Maxima weaker than this (normalised image) are not counted at all: noise of a nearly flat field. */
const BLOB_MIN_RESPONSE = 0.05;

interface DiameterEstimateOptions {
  /**
   * Count blobs (strong local maxima of the response) instead of averaging the response over the
   * foreground: for inverted brightfield, whose illumination and texture defeat the average.
   */
  countBlobs?: boolean;
}

/**
 * Estimated typical object diameter (px) of bright objects on a dark background, from a normalised
 * single-channel plane (values ~0..1). Undefined when the image has no foreground structure.
 */
export function estimateDiameterFromImage(plane: Float32Array, width: number, height: number, options: DiameterEstimateOptions = {}): number | undefined {
  const calibration = options.countBlobs ? BLOB_CALIBRATION : CALIBRATION;
  if (plane.length !== width * height) throw new Error(`plane has ${plane.length} values, expected ${width}x${height}`);
  const base = Math.max(1, Math.ceil(Math.sqrt((width * height) / MAX_WORKING_PIXELS)));
  const whole: Plane = { data: plane, width, height };
  const level0 = base === 1 ? whole : blockMean(whole, base);
  const foreground = foregroundMask(level0.data);
  let foregroundCount = 0;
  for (let i = 0; i < foreground.length; i++) foregroundCount += foreground[i]!;
  if (foregroundCount < 16) return undefined;

  const largest = Math.min(width, height) / 2;
  const diameters: number[] = [];
  for (let d = Math.max(MIN_ESTIMATED_DIAMETER, 2 * base); d <= largest; d *= SCALE_STEP) diameters.push(d);
  if (diameters.length < 3) return undefined;

  // Each downsampled level carries its foreground fraction per pixel as the averaging weight.
  const foregroundPlane: Plane = { data: Float32Array.from(foreground), width: level0.width, height: level0.height };
  const levels = new Map<number, { image: Plane; weight: Plane }>([[1, { image: level0, weight: foregroundPlane }]]);
  const imageSums = summedAreaTable(level0),
    weightSums = summedAreaTable(foregroundPlane);
  const curve = new Float64Array(diameters.length);
  const recent: ScaleResponse[] = [];
  const maximaPerScale: Array<{ value: number; weight: number }[]> = diameters.map(() => []);
  for (let k = 0; k < diameters.length; k++) {
    const sigma = (calibration * diameters[k]!) / 2 / base; // in level0 pixels
    const factor = Math.max(1, Math.floor(sigma / MIN_SIGMA_PX));
    let level = levels.get(factor);
    if (!level)
      levels.set(factor, (level = { image: blockMeanFromTable(level0, imageSums, factor), weight: blockMeanFromTable(foregroundPlane, weightSums, factor) }));
    const response = normalisedBlobResponse(level.image, sigma / factor);
    if (!options.countBlobs) curve[k] = weightedPositiveMean(response, level.weight.data);
    else {
      // Scale-space maxima need the next scale's response: each scale is scored one step late.
      recent.push({ response, factor, level });
      if (recent.length > 3) recent.shift();
      if (recent.length === 3) maximaPerScale[k - 1] = scaleSpaceMaxima(recent[0]!, recent[1]!, recent[2]!);
    }
  }
  if (options.countBlobs) {
    // Strong blobs only: texture and noise make many weak maxima, at small scales mostly.
    const values = maximaPerScale
      .flat()
      .map((m) => m.value)
      .sort((a, b) => a - b);
    if (values.length === 0) return undefined;
    const threshold = Math.max(BLOB_MIN_RESPONSE, BLOB_RELATIVE_RESPONSE * values[Math.floor(BLOB_STRONGEST_QUANTILE * (values.length - 1))]!);
    maximaPerScale.forEach((maxima, k) => {
      for (const m of maxima) if (m.value >= threshold) curve[k]! += m.weight * m.value;
    });
  }

  let best = 0;
  for (let k = 1; k < curve.length; k++) if (curve[k]! > curve[best]!) best = k;
  if (!(curve[best]! > 0)) return undefined;
  // Parabolic peak in log-diameter between the neighbours (none at the ends of the range).
  let offset = 0;
  if (best > 0 && best < curve.length - 1) {
    const a = curve[best - 1]!,
      b = curve[best]!,
      c = curve[best + 1]!;
    const denominator = a - 2 * b + c;
    if (denominator < 0) offset = Math.max(-0.5, Math.min(0.5, (0.5 * (a - c)) / denominator));
  }
  return diameters[best]! * SCALE_STEP ** offset;
}

interface Plane {
  data: Float32Array;
  width: number;
  height: number;
}

// Exported for its test only (test/engine/diameter.test.ts).
/**
 * Mean of pixel blocks of factor × factor (edge blocks partial) in one pass over the plane: the
 * first reduction of a large image, where a summed-area table would be as large as the image in
 * doubles (537 MB at 8192x8192).
 */
export function blockMean(source: Plane, factor: number): Plane {
  const width = Math.ceil(source.width / factor),
    height = Math.ceil(source.height / factor);
  const sum = new Float32Array(width * height);
  const block = new Int32Array(source.width);
  for (let x = 0; x < source.width; x++) block[x] = (x / factor) | 0;
  for (let y = 0; y < source.height; y++) {
    const row = ((y / factor) | 0) * width;
    const from = y * source.width;
    for (let x = 0; x < source.width; x++) sum[row + block[x]!]! += source.data[from + x]!;
  }
  // Pixels per block: factor² inside, fewer in the last row and column of blocks.
  for (let by = 0; by < height; by++) {
    const rows = Math.min(factor, source.height - by * factor);
    for (let bx = 0; bx < width; bx++) sum[by * width + bx]! /= rows * Math.min(factor, source.width - bx * factor);
  }
  return { data: sum, width, height };
}

// Exported for its test only (test/engine/diameter.test.ts).
/**
 * Summed-area table of a plane in double precision, (width + 1) × (height + 1) with a zero first
 * row and column, so each downsampled level reads only its own corners instead of every pixel.
 */
export function summedAreaTable(source: Plane): Float64Array {
  const { data, width, height } = source;
  const stride = width + 1;
  const sums = new Float64Array(stride * (height + 1));
  for (let y = 0; y < height; y++) {
    let row = 0;
    const from = y * width,
      above = y * stride,
      at = above + stride;
    for (let x = 0; x < width; x++) {
      row += data[from + x]!;
      sums[at + x + 1] = sums[above + x + 1]! + row;
    }
  }
  return sums;
}

// Exported for its test only (test/engine/diameter.test.ts).
/** blockMean's result from the plane's summed-area table (up to rounding): each level reads only its blocks' corners. */
export function blockMeanFromTable(source: Plane, sums: Float64Array, factor: number): Plane {
  if (factor === 1) return source;
  const width = Math.ceil(source.width / factor),
    height = Math.ceil(source.height / factor);
  const stride = source.width + 1;
  const out = new Float32Array(width * height);
  for (let by = 0; by < height; by++) {
    const top = by * factor * stride,
      bottom = Math.min(source.height, (by + 1) * factor) * stride;
    const rows = Math.min(factor, source.height - by * factor);
    for (let bx = 0; bx < width; bx++) {
      const left = bx * factor,
        right = Math.min(source.width, left + factor);
      out[by * width + bx] = (sums[bottom + right]! - sums[bottom + left]! - sums[top + right]! + sums[top + left]!) / (rows * (right - left));
    }
  }
  return { data: out, width, height };
}

/** Otsu's threshold on values clipped to [0, 1] (256 bins): 1 where brighter. */
function foregroundMask(data: Float32Array): Uint8Array {
  const bins = 256;
  const histogram = new Float64Array(bins);
  for (let i = 0; i < data.length; i++) histogram[Math.min(bins - 1, Math.max(0, Math.floor(data[i]! * bins)))]! += 1;
  let total = 0,
    weighted = 0;
  for (let b = 0; b < bins; b++) {
    total += histogram[b]!;
    weighted += b * histogram[b]!;
  }
  let below = 0,
    belowWeighted = 0,
    bestBetween = -1,
    threshold = bins / 2;
  for (let b = 0; b < bins - 1; b++) {
    below += histogram[b]!;
    belowWeighted += b * histogram[b]!;
    const above = total - below;
    if (below === 0 || above === 0) continue;
    const difference = belowWeighted / below - (weighted - belowWeighted) / above;
    const between = below * above * difference * difference;
    if (between > bestBetween) {
      bestBetween = between;
      threshold = b + 1;
    }
  }
  const mask = new Uint8Array(data.length);
  for (let i = 0; i < data.length; i++) mask[i] = data[i]! * bins >= threshold ? 1 : 0;
  return mask;
}

/** −σ²∇²(G_σ * I): positive at the centres of bright blobs, comparable across scales. */
function normalisedBlobResponse(level: Plane, sigma: number): Float32Array {
  const { width, height } = level;
  const blurred = gaussianBlur(level, sigma);
  const out = new Float32Array(width * height);
  for (let y = 0; y < height; y++) blobResponseRow(blurred, width, height, y, sigma * sigma, out);
  return out;
}

/** Row y of −σ²∇²: a function of its own so that V8 optimises it after a few rows (see blurRow). */
function blobResponseRow(blurred: Float32Array, width: number, height: number, y: number, s2: number, out: Float32Array): void {
  const up = Math.max(0, y - 1) * width,
    row = y * width,
    down = Math.min(height - 1, y + 1) * width;
  for (let x = 0; x < width; x++) {
    const left = Math.max(0, x - 1),
      right = Math.min(width - 1, x + 1);
    const centre = blurred[row + x]!;
    const laplacian = blurred[up + x]! + blurred[down + x]! + blurred[row + left]! + blurred[row + right]! - 4 * centre;
    out[row + x] = -s2 * laplacian;
  }
}

/**
 * Separable Gaussian blur, edges replicated. The kernel is symmetric, so each output adds the
 * centre tap and then, for i = 1..radius, weight(i) × (the two samples i away): half the
 * multiplications. Every output sums in that order, in double precision, whether near an edge
 * (clamped indices) or not. Both passes keep a double-precision row of sums and add taps to the
 * whole row a few at a time (the column pass reading a source row per tap), so the inner loops are
 * independent across the row and read memory in order; the row pass reads a copy of its row padded
 * with the edge pixels, the column pass clamps row numbers.
 */
function gaussianBlur(level: Plane, sigma: number): Float32Array {
  const { data, width, height } = level;
  const radius = Math.ceil(3 * sigma);
  // weight[i] for offsets ±i (float32, as the kernel always was).
  const weight = new Float32Array(radius + 1);
  let sum = 0;
  for (let i = 0; i <= radius; i++) {
    weight[i] = Math.exp(-(i * i) / (2 * sigma * sigma));
    sum += i === 0 ? weight[i]! : 2 * weight[i]!;
  }
  for (let i = 0; i <= radius; i++) weight[i]! /= sum;
  const rows = new Float32Array(width * height);
  const acc = new Float64Array(width);
  // One source row with `radius` copies of its end pixels on each side: the row pass then reads
  // the replicated edge without clamping any index.
  const padded = new Float32Array(width + 2 * radius);
  for (let y = 0; y < height; y++) {
    blurRow(data, y * width, padded, weight, acc);
    rows.set(acc, y * width);
  }
  const out = new Float32Array(width * height);
  for (let y = 0; y < height; y++) {
    blurColumnsAt(rows, width, height, y, weight, acc);
    out.set(acc, y * width);
  }
  return out;
}

// The two passes' inner loops live in functions of their own, called once per row: V8 optimises
// them as whole functions after a few rows. Inside one large function it compiled each inner loop
// on its own (on-stack replacement) and threw that code away at every loop exit, so a fresh
// process ran most of its first blurs unoptimised.

/**
 * acc[x] = the row pass's value at x of the row of `data` starting at `row`. Four taps per sweep,
 * (((acc + tap i) + tap i + 1) + …): the same additions in the same order as one tap per sweep,
 * with a quarter of the loads and stores of the sums (two taps per sweep: 13 % faster than one,
 * four: another 4 %).
 */
function blurRow(data: Float32Array, row: number, padded: Float32Array, weight: Float32Array, acc: Float64Array): void {
  const width = acc.length;
  const radius = weight.length - 1;
  const centre = weight[0]!;
  for (let x = 0; x < radius; x++) padded[x] = data[row]!;
  for (let x = 0; x < width; x++) padded[radius + x] = data[row + x]!;
  for (let x = radius + width; x < padded.length; x++) padded[x] = data[row + width - 1]!;
  for (let x = 0; x < width; x++) acc[x] = centre * padded[radius + x]!;
  let i = 1;
  for (; i + 3 <= radius; i += 4) {
    const w1 = weight[i]!,
      w2 = weight[i + 1]!,
      w3 = weight[i + 2]!,
      w4 = weight[i + 3]!;
    const l1 = radius - i,
      r1 = radius + i;
    for (let x = 0; x < width; x++)
      acc[x] =
        acc[x]! +
        w1 * (padded[l1 + x]! + padded[r1 + x]!) +
        w2 * (padded[l1 - 1 + x]! + padded[r1 + 1 + x]!) +
        w3 * (padded[l1 - 2 + x]! + padded[r1 + 2 + x]!) +
        w4 * (padded[l1 - 3 + x]! + padded[r1 + 3 + x]!);
  }
  for (; i <= radius; i++) {
    const w = weight[i]!;
    const l = radius - i,
      r = radius + i;
    for (let x = 0; x < width; x++) acc[x]! += w * (padded[l + x]! + padded[r + x]!);
  }
}

/** acc[x] = the column pass's value at (x, y) from the row pass's output, rows clamped at the top and bottom; four taps per sweep as blurRow. */
function blurColumnsAt(rows: Float32Array, width: number, height: number, y: number, weight: Float32Array, acc: Float64Array): void {
  const radius = weight.length - 1;
  const centre = weight[0]!;
  const middle = y * width;
  for (let x = 0; x < width; x++) acc[x] = centre * rows[middle + x]!;
  let i = 1;
  for (; i + 3 <= radius; i += 4) {
    const w1 = weight[i]!,
      w2 = weight[i + 1]!,
      w3 = weight[i + 2]!,
      w4 = weight[i + 3]!;
    const a1 = Math.max(0, y - i) * width,
      b1 = Math.min(height - 1, y + i) * width,
      a2 = Math.max(0, y - i - 1) * width,
      b2 = Math.min(height - 1, y + i + 1) * width,
      a3 = Math.max(0, y - i - 2) * width,
      b3 = Math.min(height - 1, y + i + 2) * width,
      a4 = Math.max(0, y - i - 3) * width,
      b4 = Math.min(height - 1, y + i + 3) * width;
    for (let x = 0; x < width; x++)
      acc[x] =
        acc[x]! +
        w1 * (rows[a1 + x]! + rows[b1 + x]!) +
        w2 * (rows[a2 + x]! + rows[b2 + x]!) +
        w3 * (rows[a3 + x]! + rows[b3 + x]!) +
        w4 * (rows[a4 + x]! + rows[b4 + x]!);
  }
  for (; i <= radius; i++) {
    const w = weight[i]!;
    const above = Math.max(0, y - i) * width,
      below = Math.min(height - 1, y + i) * width;
    for (let x = 0; x < width; x++) acc[x]! += w * (rows[above + x]! + rows[below + x]!);
  }
}

/** Foreground-weighted mean of the positive part of the response. */
function weightedPositiveMean(response: Float32Array, weight: Float32Array): number {
  let sum = 0,
    total = 0;
  for (let i = 0; i < response.length; i++) {
    const w = weight[i]!;
    total += w;
    if (w > 0 && response[i]! > 0) sum += w * response[i]!;
  }
  return total > 0 ? sum / total : 0;
}

interface ScaleResponse {
  response: Float32Array;
  /** Downsampling of its level against level0. */
  factor: number;
  level: { image: Plane; weight: Plane };
}

/**
 * The scale-space maxima of the middle scale: above the scale below and the scale above at the same
 * place, and above their 8 neighbours, with their response and foreground fraction. Requiring a
 * maximum over scale too drops the maxima along edges and the rims of flat-topped nuclei at small
 * scales, whose response still grows with scale.
 */
function scaleSpaceMaxima(below: ScaleResponse, at: ScaleResponse, above: ScaleResponse): { value: number; weight: number }[] {
  const { response, factor } = at;
  const { width, height } = at.level.image;
  const weight = at.level.weight.data;
  /** The value of another scale's response at this level's pixel (x, y): nearest pixel of its level. */
  const sample = (other: ScaleResponse, x: number, y: number) => {
    const ratio = factor / other.factor;
    const { width: w, height: h } = other.level.image;
    const ox = Math.min(w - 1, Math.floor((x + 0.5) * ratio)),
      oy = Math.min(h - 1, Math.floor((y + 0.5) * ratio));
    return other.response[oy * w + ox]!;
  };
  const maxima: { value: number; weight: number }[] = [];
  for (let y = 1; y < height - 1; y++) {
    for (let x = 1; x < width - 1; x++) {
      const i = y * width + x,
        v = response[i]!;
      if (!(v > BLOB_MIN_RESPONSE) || !(weight[i]! > 0)) continue;
      const up = i - width,
        down = i + width;
      if (
        !(
          response[up - 1]! < v &&
          response[up]! < v &&
          response[up + 1]! < v &&
          response[i - 1]! < v &&
          response[i + 1]! < v &&
          response[down - 1]! < v &&
          response[down]! < v &&
          response[down + 1]! < v
        )
      )
        continue;
      if (sample(below, x, y) < v && sample(above, x, y) < v) maxima.push({ value: v, weight: weight[i]! });
    }
  }
  return maxima;
}
