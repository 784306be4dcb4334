// The bounds on what one job may cost, defined once for the worker (which refuses a request past
// them with 422, or fails a job past its time) and the runner (which refuses a job past them before
// any work, whatever submitted it). Each bound is on a parameter that multiplies work: a block's
// margins grow with the diameter and the cell expansion's reach, so both multiply the pixels read
// and segmented (with 2 x 1000 px of margins and a 256-px core, each pixel was read 209 times).

/**
 * Largest object diameter a prediction may name, in pixels. Cellpose users name 10-200 px; 300 px
 * is already 12.5 times cpsam's 24 px. A block's margins are twice the diameter, so with the largest
 * expansion reach beside it the default 640 MB block still keeps a core of 1238 px, and a pixel is
 * read at most 6.8 times (3238² blocks), against 209 times at 1000 px.
 */
export const MAX_DIAMETER_PX = 300;
/**
 * Smallest object diameter a prediction may name, in pixels (0 still means "estimate it"). The
 * image is enlarged by the model's diameter over this, and the network's work by its square:
 * 5 px is 23 times cpsam's work at 24 px; a diameter of 0.5 px was 2,300 times.
 */
export const MIN_DIAMETER_PX = 5;
/**
 * An estimated diameter never enlarges the image more than this: a wrong estimate on noise must not
 * make a job fail or take many times longer; a user who knows the objects are that small can say so.
 */
export const MAX_AUTO_ENLARGEMENT = 3;
/**
 * Farthest a cell expansion may reach, in pixels: the distance in µm over the smallest pixel size,
 * or the distance in px. QuPath's default 5 µm is 20 px at 0.25 µm a pixel and 50 px at 0.1 µm;
 * 200 px is 20 µm at 0.1 µm. A block's margins grow by twice the reach.
 */
export const MAX_EXPANSION_REACH_PX = 200;

/** The pixels a cell expansion reaches: `distance` in the units of a pixel of sx × sy. */
export function expansionReachPx(distance: number, sx: number, sy: number): number {
  return Math.ceil(distance / Math.min(sx, sy));
}

/** Why a cell expansion reaches too far, or null: a reason naming the limit, for a 422 or a FAILED job. */
export function expansionReachRefusal(expansion: { um: number; pixelSize: { x: number; y: number } } | { px: number }): string | null {
  if ("px" in expansion) {
    return expansion.px > MAX_EXPANSION_REACH_PX
      ? `cell_expansion_px ${expansion.px} is past the limit of ${MAX_EXPANSION_REACH_PX} px a cell expansion may reach`
      : null;
  }
  const { um, pixelSize } = expansion;
  const reach = expansionReachPx(um, pixelSize.x, pixelSize.y);
  if (reach <= MAX_EXPANSION_REACH_PX) return null;
  const size = Math.min(pixelSize.x, pixelSize.y);
  return (
    `cell_expansion_um ${um} at a pixel size of ${size} µm reaches ${reach} px, past the limit of ${MAX_EXPANSION_REACH_PX} px ` +
    `a cell expansion may reach (at most ${+(MAX_EXPANSION_REACH_PX * size).toPrecision(3)} µm at this pixel size)`
  );
}

/** Why a diameter is out of bounds, or null (undefined: estimated from the image, always within them). */
export function diameterRefusal(diameter: number | undefined): string | null {
  if (diameter === undefined) return null;
  if (diameter > MAX_DIAMETER_PX) return `diameter ${diameter} px is past the limit of ${MAX_DIAMETER_PX} px (downscale the image for larger objects)`;
  if (diameter < MIN_DIAMETER_PX) return `diameter ${diameter} px is below the limit of ${MIN_DIAMETER_PX} px (0 or "auto" estimates it)`;
  return null;
}

/**
 * Flow steps (Cellpose's `niter`) a prediction may name, counted at the network's scale. Cellpose
 * runs 200 (its default, kept here) and its documentation suggests more for long or large ROIs;
 * 2000 is ten times that. The steps multiply the mask stage's work: every foreground pixel takes
 * each of them, and on a pass that shrank the image (objects above the model's diameter) the
 * steps are taken at the image's resolution, niter × diameter / model diameter of them
 * (masks/compute-masks.ts). The issue that set this found 10,000 at 300 px: 125,000 steps a pixel.
 */
const DEFAULT_NITER = 200;
export const MAX_NITER = 2000;
/**
 * The cell-probability threshold's range: the network's logits lie between about -6 and +6
 * (Cellpose's documentation of `cellprob_threshold`), so past them every pixel, or none, is
 * foreground; below -6 the mask stage only traces background.
 */
export const CELLPROB_THRESHOLD_RANGE = { min: -6, max: 6 } as const;
/**
 * The flow-error threshold's range: Cellpose documents 0 to 1 (0.4 by default; 0 turns the check
 * off); above about 1 no mask with a coherent flow is dropped, so 3 leaves room and nothing more.
 */
export const FLOW_THRESHOLD_RANGE = { min: 0, max: 3 } as const;

/**
 * Time limits of the runners' jobs, from the time they take now. A prediction runs at 1.3-1.7 s a
 * megapixel block by block on a shared 2-core CPU (docs/benchmarks.md, bench:big; 4.6 s/MP end to end for a
 * 4200² upload on the local stack, fetching and decoding included); the limit allows 10 s a
 * megapixel, 4 times that again with test-time augmentation (4x the network), and the enlargement's
 * square for a diameter below cpsam's 24 px (an estimated one: the largest it may have, 3x), plus 5 minutes for fetching the model and the image.
 * The mask stage is priced by its steps on top (predictionPrice).
 * A preview or a measurement decodes and reads the image (a fraction of a prediction's time).
 * No job runs past 4 hours: a 32768² slide predicts in 30 minutes on 2 cores.
 */
export const TIME_LIMITS = {
  baseSeconds: 300,
  predictionSecondsPerMegapixel: 10,
  readSecondsPerMegapixel: 2,
  /**
   * Seconds a megapixel costs per flow or diffusion step in the mask stage, every pixel taking
   * them: 234 s a megapixel at 125,000 steps on one thread (the measurement, every pixel
   * foreground), 1.9 ms; two threads took 124 s for 4.2 MP at 25,000 steps (`npm run segment` on
   * a 2-core machine, cpsam on 2048² synthetic nuclei, cellprob_threshold -6): 2.4 ms a thread. 3 ms leaves room.
   */
  maskSecondsPerMegapixelStep: 0.003,
  maxSeconds: 4 * 3600,
  /** The diameter the network's speed was measured at (cpsam's). */
  networkDiameterPx: 24,
} as const;

/** A prediction's parameters that multiply its work; left out: the defaults (diameter: estimated). */
export interface PricedParams {
  diameter?: number;
  augment?: boolean;
  niter?: number;
  /** 0 turns the flow-error check off; left out, the model's default may run it. */
  flowThreshold?: number;
}

/** What a prediction's parameters make of the work on each megapixel of its image. */
interface PredictionPrice {
  /** Network pixels per image pixel: the enlargement's square, 4x with augment. */
  networkFactor: number;
  /** Flow steps per foreground pixel at the image's resolution. */
  flowSteps: number;
  /** Heat-diffusion steps per pixel of the flow-error check: about 4 diameters (2 x the mask's box sides); 0 with it off. */
  checkSteps: number;
  secondsPerMegapixel: number;
}

function priceAt(diameter: number, params: PricedParams): PredictionPrice {
  const { networkDiameterPx: model, predictionSecondsPerMegapixel, maskSecondsPerMegapixelStep } = TIME_LIMITS;
  const networkFactor = Math.max(1, model / diameter) ** 2 * (params.augment ? 4 : 1);
  const flowSteps = (params.niter ?? DEFAULT_NITER) * Math.max(1, diameter / model);
  const checkSteps = params.flowThreshold === 0 ? 0 : 4 * diameter;
  const secondsPerMegapixel = predictionSecondsPerMegapixel * networkFactor + maskSecondsPerMegapixelStep * (flowSteps + checkSteps);
  return { networkFactor, flowSteps, checkSteps, secondsPerMegapixel };
}

/**
 * The work a prediction's parameters price each megapixel at. An estimated diameter may come out
 * anywhere from the model's over MAX_AUTO_ENLARGEMENT (the network's most work) to MAX_DIAMETER_PX
 * (the masks' most steps): priced at the dearer end.
 */
function predictionPrice(params: PricedParams): PredictionPrice {
  if (params.diameter !== undefined) return priceAt(params.diameter, params);
  const smallest = priceAt(TIME_LIMITS.networkDiameterPx / MAX_AUTO_ENLARGEMENT, params);
  const largest = priceAt(MAX_DIAMETER_PX, params);
  return smallest.secondsPerMegapixel >= largest.secondsPerMegapixel ? smallest : largest;
}

export type TimedWork = { kind: "preview" | "measurement"; pixels: number | null } | ({ kind: "prediction"; pixels: number | null } & PricedParams);

/** A job's work in seconds, before the 4-h cap (null: the image's size is unknown). */
function pricedSeconds(work: TimedWork): number | null {
  if (work.pixels === null) return null;
  const perMegapixel = work.kind === "prediction" ? predictionPrice(work).secondsPerMegapixel : TIME_LIMITS.readSecondsPerMegapixel;
  return TIME_LIMITS.baseSeconds + (work.pixels / 1e6) * perMegapixel;
}

/** A job's time limit in seconds, counted from its first start across every attempt. */
export function jobTimeLimitSeconds(work: TimedWork): number {
  const seconds = pricedSeconds(work);
  return seconds === null ? TIME_LIMITS.maxSeconds : Math.min(TIME_LIMITS.maxSeconds, Math.ceil(seconds));
}

/** A parameter of a prediction past its work budget, and why (a 422's `loc` and `msg`). */
interface WorkRefusal {
  param: keyof PricedParams;
  msg: string;
}

const PARAM_NAMES: Record<keyof PricedParams, string> = { diameter: "diameter", augment: "augment", niter: "niter", flowThreshold: "flow_threshold" };

/**
 * Why a prediction's parameters price it past the work a job may do, or null. The budget is the
 * 4-h limit; an image whose size alone, at its diameter and the other defaults, already costs more
 * (a whole slide, which the time limit then caps) may not be made dearer by the other parameters.
 * The parameter named is the one whose default would save the most.
 */
export function predictionWorkRefusal(pixels: number | null, params: PricedParams): WorkRefusal | null {
  if (pixels === null) return null;
  const seconds = pricedSeconds({ kind: "prediction", pixels, ...params })!;
  const atDefaults = pricedSeconds({ kind: "prediction", pixels, diameter: params.diameter })!;
  if (seconds <= Math.max(TIME_LIMITS.maxSeconds, atDefaults)) return null;
  let param: keyof PricedParams = "niter";
  let best = Number.POSITIVE_INFINITY;
  for (const name of Object.keys(PARAM_NAMES) as (keyof PricedParams)[]) {
    if (params[name] === undefined) continue;
    const without = pricedSeconds({ kind: "prediction", pixels, ...params, [name]: undefined })!;
    if (without < best) {
      best = without;
      param = name;
    }
  }
  const price = predictionPrice(params);
  const hours = (s: number) => +(s / 3600).toPrecision(2);
  return {
    param,
    msg:
      `${PARAM_NAMES[param]} ${params[param]} prices this prediction of ${+(pixels / 1e6).toPrecision(3)} MP at about ${hours(seconds)} h of work ` +
      `(${Math.round(price.flowSteps)} flow steps a pixel, ${+price.networkFactor.toPrecision(3)}x the network's pixels), past the ` +
      `${hours(TIME_LIMITS.maxSeconds)} h a prediction may take: ${param === "augment" ? "turn it off" : "lower it"}, or segment a smaller region`,
  };
}

/**
 * Steps of heat diffusion a mask of a w x h box gets when its flows are made (training's flow
 * targets) or checked (a prediction's flow-error check): twice its box's extent, after Cellpose's
 * masks_to_flows_cpu, which diffuses each mask on its own (its GPU version gives every mask of an
 * image the largest mask's count, so one object the size of the image multiplied every other's
 * work: a 2449² ring around 93,025 squares of 4 px took 63.5 s to prepare instead of 0.23 s).
 * Past about this many steps the heat's gradient keeps its direction, which is all the flows use.
 */
export function diffusionSteps(w: number, h: number): number {
  return 2 * (w + h + 2);
}

/** The pixel-steps of heat diffusion that preparing these objects for training takes: each object's area times its steps. */
export function diffusionWork(objects: Iterable<{ area_px: number; bbox_w: number; bbox_h: number }>): number {
  let work = 0;
  for (const o of objects) work += o.area_px * diffusionSteps(o.bbox_w, o.bbox_h);
  return work;
}

// Exported for its test only (test/engine/segment-blocks.test.ts).
/**
 * How many times over a job may read its image's bytes through ranged reads (k). Block-wise
 * reading reads a row-sequential file (a PNG, a strip TIFF) about three times at most: once for the
 * survey's sample windows, once for the diameter window (with diameter "auto"), once for the blocks
 * (band by band, each band continuing where the last stopped); a tiled TIFF reads its margins'
 * tiles again, well under this. Past it a job is FAILED with the reason, not left re-reading.
 */
export const MAX_READ_FACTOR = 3;
/** Bytes read beyond k x the file for headers, directories and the reads' windows. */
const READ_SLACK_BYTES = 2 * 2 ** 20;

/** The most bytes a job may read of an image of `fileBytes` bytes. */
export function readCapBytes(fileBytes: number): number {
  return MAX_READ_FACTOR * fileBytes + READ_SLACK_BYTES;
}
