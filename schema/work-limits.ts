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
 * Time limits of the runners' jobs, from the time they take now. A prediction runs at 1.3-1.7 s a
 * megapixel block by block on a shared 2-core CPU (docs/benchmarks.md, bench:big; 4.6 s/MP end to end for a
 * 4200² upload on the local stack, fetching and decoding included); the limit allows 10 s a
 * megapixel, 4 times that again with test-time augmentation (4x the network), and the enlargement's
 * square for a diameter below cpsam's 24 px (an estimated one: the largest it may have, 3x), plus 5 minutes for fetching the model and the image.
 * A preview or a measurement decodes and reads the image (a fraction of a prediction's time).
 * No job runs past 4 hours: a 32768² slide predicts in 30 minutes on 2 cores.
 */
export const TIME_LIMITS = {
  baseSeconds: 300,
  predictionSecondsPerMegapixel: 10,
  readSecondsPerMegapixel: 2,
  maxSeconds: 4 * 3600,
  /** The diameter the network's speed was measured at (cpsam's). */
  networkDiameterPx: 24,
} as const;

export interface TimedWork {
  kind: "prediction" | "preview" | "measurement";
  /** The image's pixels; unknown: the longest limit. */
  pixels: number | null;
  /** A prediction's parameters that multiply its time. */
  augment?: boolean;
  diameter?: number;
}

/** A job's time limit in seconds, counted from its first start across every attempt. */
export function jobTimeLimitSeconds(work: TimedWork): number {
  if (work.pixels === null) return TIME_LIMITS.maxSeconds;
  const megapixels = work.pixels / 1e6;
  let perMegapixel: number = TIME_LIMITS.readSecondsPerMegapixel;
  if (work.kind === "prediction") {
    const enlargement = work.diameter ? Math.max(1, TIME_LIMITS.networkDiameterPx / work.diameter) : MAX_AUTO_ENLARGEMENT;
    perMegapixel = TIME_LIMITS.predictionSecondsPerMegapixel * (work.augment ? 4 : 1) * enlargement ** 2;
  }
  return Math.min(TIME_LIMITS.maxSeconds, Math.ceil(TIME_LIMITS.baseSeconds + megapixels * perMegapixel));
}

/**
 * How many times over a job may read its image's bytes through ranged reads (k). Block-wise
 * reading reads a row-sequential file (a PNG, a strip TIFF) about three times at most: once for the
 * survey's sample windows, once for the diameter window (with diameter "auto"), once for the blocks
 * (band by band, each band continuing where the last stopped); a tiled TIFF reads its margins'
 * tiles again, well under this. Past it a job is FAILED with the reason, not left re-reading.
 */
export const MAX_READ_FACTOR = 3;
/** Bytes read beyond k x the file for headers, directories and the reads' windows. */
export const READ_SLACK_BYTES = 2 * 2 ** 20;

/** The most bytes a job may read of an image of `fileBytes` bytes. */
export function readCapBytes(fileBytes: number): number {
  return MAX_READ_FACTOR * fileBytes + READ_SLACK_BYTES;
}
