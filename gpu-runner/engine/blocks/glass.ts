// Glass costs nothing: whole slides are mostly background, and a block with no signal in it skips
// the network and the masks. The test runs on the model's input (model-input.ts: nuclei bright,
// glass dark, whatever the modality), against the survey's normalisation bounds (image-survey.ts),
// so it sees the values the network would read, scaled as every block of the image is scaled.
//
// The rule. Per model-input channel, a level is foreground when it is above
// lower + GLASS_FOREGROUND_FRACTION * (upper - lower) of the survey's bounds: a quarter of the way
// from what the network reads as 0 to what it reads as 1. Where the bounds coincide (a flat survey)
// anything above them is foreground. The block is cut into square bins of side
// glassBinSide(diameter) = diameter / 8; a bin is foreground when its mean in some channel is
// foreground, each pixel's value counting at most up to `upper`. The block is glass when fewer than
// glassBinsNeeded(diameter) bins are foreground.
//
// Why bins and not single pixels (the rule first suggested counted pixels above the level, glass
// below a quarter of a cell's area, pi/16 d²). The survey's lower bound is a low percentile: on a
// slide that is mostly glass it lies about 2.3 standard deviations of the camera noise below the
// glass's own level, so the foreground level sits only a little above the glass wherever the stain
// is not many times the noise, and single noise pixels cross it by the hundred in a block (a slide
// whose nuclei are 20 noise deviations above the glass: the test). A bin's mean has the noise
// divided by its side (2 at a diameter of 16 to 23 px, 3 at 24, 7 at 56), while a nucleus, many
// bins wide, keeps its level: glass is skipped at a lower signal-to-noise ratio, and the count of
// foreground bins needed can be small, which keeps small nuclei safe (the quarter-area count of
// pixels missed an object of half the diameter at some positions on the pixel grid: drawn by pixel
// centres it has a few pixels fewer than pi/16 d², before any soft edge).
// - Which nucleus must never be skipped: any object of half the survey's diameter (a quarter of a
//   typical cell's area) that is foreground throughout. A disc of diameter d/2 is at least 2 bins
//   in radius, and wherever it lies on the grid it covers at least 4 bins wholly (the test tries
//   sub-pixel positions over a whole bin), so 4 bins are needed; below a diameter of 8 px, where
//   bins are single pixels and such a disc may cover a single pixel, 1 is.
// - Why values count up to `upper` only: a hot pixel or a speck of dust far brighter than any
//   nucleus raises its bin's mean by at most (upper - lower) / side² from glass at the lower bound,
//   under the foreground level from a side of 3 (at a side of 2, four hot pixels in four bins may keep
//   a block of glass: a cost, not a loss). A nucleus is bright in every pixel and loses nothing by it.
// - Channels: a bin is foreground when any channel says so (a colour model's three planes, or a
//   model of several channels whose second channel shows cells the first does not).
// - NaN counts as the upper bound.
// - Tissue without nuclei (stroma, pink on H&E) is foreground as well: it is never skipped.
// The bins are scanned a strip of rows at a time and the test stops at the needed count: on tissue
// it reads the strips down to the first tissue, on glass the whole block once (about 4 ns a value
// on a loaded CPU: 35 ms for a 3072² block of one channel, 80 ms for three, next to the model
// input's 200-300 ms and seconds of network).
//
// What it cannot do: when the survey's own bounds are those of noise (an image of noise and nothing
// else, or tissue under about 1% of the sampled pixels), noise reaches the network's 1 as it reaches
// the foreground level, and nothing is skipped; the network reads that noise at full contrast too.
//
// Using it in a block loop without making the model input twice: make it with modelInput (the
// request's channels, the survey's modality), test it with isGlass, and hand a block found not glass
// to segmentImage as prepared (options.preparedFor: the modality modelInput returned, with the
// survey's normalization): the same cells as from the region (the test). That holds for models that
// read the modality (one channel, or colour); for other models the model input is the selected
// channels as they are, and the region goes to segmentImage as before. blockIsGlass does it all on a
// region as read, making the model input once more.
import type { DecodedImage } from "../../../common/decode/index.ts";
import type { ModelReads } from "../model.ts";
import { modelInput } from "../model-input.ts";
import type { Modality } from "../modality.ts";
import type { ChannelBounds } from "../normalize.ts";

// Exported for its test only (test/engine/glass.test.ts).
/** Where between the survey's lower (network's 0) and upper (network's 1) bound a level counts as foreground. */
export const GLASS_FOREGROUND_FRACTION = 0.25;

// Exported for its test only (test/engine/glass.test.ts).
/** Side in pixels of the square bins the block's levels are averaged over (diameter / 8, at least 1). */
export function glassBinSide(diameterPx: number): number {
  return Math.max(1, Math.floor(diameterPx / 8));
}

// Exported for its test only (test/engine/glass.test.ts).
/** Foreground bins that make a block tissue: the bins a disc of half the diameter covers wholly wherever it lies (file comment). */
export function glassBinsNeeded(diameterPx: number): number {
  return diameterPx / 4 / glassBinSide(diameterPx) >= 2 ? 4 : 1;
}

// Exported for its test only (test/engine/glass.test.ts).
/**
 * Whether no cell can be in this model input (modelInput's image, before normalisation): see the
 * file comment for the rule. `bounds` are the survey's normalisation bounds per model-input channel
 * (what segmentImage is given as `normalization`), `diameterPx` the diameter the blocks run at, in
 * the block's pixels (the survey's, or the model's where the survey has none).
 */
export function isGlass(input: DecodedImage, bounds: ChannelBounds, diameterPx: number): boolean {
  const { width, height, channels, data } = input;
  if (bounds.low.length !== channels || bounds.high.length !== channels)
    throw new Error(`normalisation bounds for ${bounds.low.length} channels, the model input has ${channels}`);
  if (!(diameterPx > 0 && Number.isFinite(diameterPx))) throw new Error(`diameter must be a positive number of pixels, got ${diameterPx}`);
  const plane = width * height;
  if (plane === 0) return true;
  const level = new Float64Array(channels);
  const ceiling = new Float64Array(channels);
  for (let c = 0; c < channels; c++) {
    const low = bounds.low[c]!,
      high = bounds.high[c]!;
    // Bounds that are no numbers (a survey of NaNs) say nothing: the block is not judged glass.
    if (!(Number.isFinite(low) && Number.isFinite(high))) return false;
    const spread = high - low;
    level[c] = spread > 0 ? low + GLASS_FOREGROUND_FRACTION * spread : low;
    ceiling[c] = spread > 0 ? high : Number.POSITIVE_INFINITY;
  }
  const side = glassBinSide(diameterPx);
  const needed = glassBinsNeeded(diameterPx);
  const columns = Math.ceil(width / side);
  const sums = new Float64Array(channels * columns);
  // A strip's rows summed per column (a tight loop over each row), then per bin.
  const columnSums = new Float64Array(width);
  let found = 0;
  for (let top = 0; top < height; top += side) {
    const rows = Math.min(side, height - top);
    for (let c = 0; c < channels; c++) {
      const ceil = ceiling[c]!;
      columnSums.fill(0);
      for (let y = top; y < top + rows; y++) {
        const row = data.subarray(c * plane + y * width, c * plane + (y + 1) * width);
        for (let x = 0; x < width; x++) {
          const v = row[x]!;
          // biome-ignore lint/complexity/useMathMinMax: NaN fails the comparison and counts as the ceiling (Math.min would keep the NaN).
          columnSums[x]! += v < ceil ? v : ceil;
        }
      }
      for (let b = 0, x = 0; b < columns; b++) {
        const end = Math.min(width, x + side);
        let sum = 0;
        for (; x < end; x++) sum += columnSums[x]!;
        sums[c * columns + b] = sum;
      }
    }
    for (let b = 0; b < columns; b++) {
      const pixels = rows * (Math.min(width, (b + 1) * side) - b * side);
      for (let c = 0; c < channels; c++) {
        // NaN sums (an infinite ceiling met by -Infinity and +Infinity) count as foreground too.
        const sum = sums[c * columns + b]!;
        if (sum > level[c]! * pixels || Number.isNaN(sum)) {
          if (++found >= needed) return false;
          break;
        }
      }
    }
  }
  return true;
}

/**
 * isGlass on a block's region as read: makes the model input as segmentImage does (modelInput with
 * the request's channels and the survey's modality, never "auto" for a model that reads the
 * modality, or each block would decide its own) and tests it. To run the network on a block found
 * not glass without making its model input again, see the file comment's last paragraph.
 */
export function blockIsGlass(
  region: DecodedImage,
  model: ModelReads,
  channels: number[] | undefined,
  modality: Modality | "auto",
  bounds: ChannelBounds,
  diameterPx: number,
): boolean {
  return isGlass(modelInput(region, model, channels, modality).image, bounds, diameterPx);
}
