// What every block of a large image must share, measured on samples of the image rather than all
// of it: the modality, the normalisation bounds (percentiles of a grid of windows spread over the
// image, as Cellpose's distributed segmentation and QuPath normalise a whole slide from a
// subsample) and, with diameter "auto", the cell diameter, found by the single-image pipeline on
// the three windows richest in foreground (glass left out), their median kept. Blocks then run with these fixed, so a cell is scaled and sized
// alike wherever the seams fall.
import type { LoadedModel } from "../model.ts";
import { decidedModelInput } from "../modality-by-network.ts";
import type { ModalityDecision, ModalityReading } from "../modality.ts";
import { readModalityOfRegions, readSample, sampleWindows } from "../../../common/modality.ts";
import { channelBounds } from "../normalize.ts";
import type { ChannelBounds } from "../normalize.ts";
import { DEFAULT_SEGMENT_PARAMS, segmentImage } from "../segment.ts";
import type { DiameterEstimate, SegmentParams } from "../segment.ts";
import type { Rectangle } from "./block-grid.ts";
import { calibratedDiameter, givenBasis, modelBasis } from "../diameter-basis.ts";
import type { DiameterBasis } from "../../../schema/diameter-basis.ts";
import type { RegionSource } from "./region-source.ts";
import type { DisplayRange } from "../../../common/stretch.ts";
import { displayRanges } from "../preview.ts";

/** Windows per side of the sampling grid, and their side in pixels (16 windows of 512²: 4 MP sampled). */
const SURVEY_GRID = 4;
export const SURVEY_WINDOW = 512;
/** Side of the windows the diameter is estimated on (the single-image pipeline's "auto"). */
const DIAMETER_WINDOW = 1024;
/** Windows the diameter is estimated on, apart from one another; their median is used. */
const DIAMETER_WINDOWS = 3;

/** As many windows as cover at most a quarter of the image (at least one): the estimate stays a small part of the work. */
function diameterWindowCount(pixels: number, side: number): number {
  return Math.max(1, Math.min(DIAMETER_WINDOWS, Math.floor(pixels / (4 * side * side))));
}

export interface ImageSurvey {
  /** Models that read the modality: what the samples showed (or the request gave). */
  modality?: ModalityDecision;
  /** Per model-input channel, the values every block maps to 0 and 1. */
  normalization: ChannelBounds;
  /** Diameter (px) every block runs at: the request's, the estimate's, or undefined (the model's, no rescaling). */
  diameter: number | undefined;
  diameterEstimate?: DiameterEstimate;
  /** Which diameter and why, in words. */
  diameterBasis: DiameterBasis;
  /** Where the diameter kept (the windows' median) was estimated. */
  diameterWindow?: Rectangle;
  /** Pixels read to measure all this. */
  sampledPixels: number;
  /**
   * How the image is shown (the 8-bit stretch of each shown channel, preview.ts), from the raw
   * sample windows: a fanned-out prediction's pyramid and full-resolution tiles all use it.
   */
  display?: DisplayRange[];
}

/** A grid of square windows spread evenly over the image (overlapping where it is small). */
function surveyWindows(width: number, height: number, grid = SURVEY_GRID, side = SURVEY_WINDOW): Rectangle[] {
  return sampleWindows(width, height, grid, side);
}

/** What the survey's windows say of the image's modality, before any model is chosen (the model is picked for it). */
export async function surveyModality(source: RegionSource): Promise<ModalityReading> {
  return readModalityOfRegions(source);
}

export async function surveyImage(source: RegionSource, model: LoadedModel, params: Partial<SegmentParams>, signal?: AbortSignal): Promise<ImageSurvey> {
  const { manifest } = model;
  const windows = surveyWindows(source.width, source.height);
  // An unsure reading of the samples is settled by the network, as for a whole image (modality-by-network.ts).
  const sample = await readSample(source, windows);
  // Taken before the model input is made from the sample.
  const display = displayRanges(sample);
  const { image: input, modality } = await decidedModelInput(sample, model, { ...DEFAULT_SEGMENT_PARAMS, ...params });
  const normalization = channelBounds(input, manifest.normalization);
  const sampledPixels = windows.reduce((sum, w) => sum + w.width * w.height, 0);
  const known = { ...(modality && { modality }), normalization, sampledPixels, display };
  if (params.diameter === undefined) return { ...known, diameter: undefined, diameterBasis: modelBasis(manifest.diameter) };
  if (params.diameter !== "auto") return { ...known, diameter: params.diameter, diameterBasis: givenBasis(params.diameter) };
  // A calibrated image runs at the size the model learned in µm: nothing to estimate.
  const calibrated = calibratedDiameter(manifest, modality?.modality, params.pixelSize);
  if (calibrated) return { ...known, diameter: calibrated.diameter, diameterBasis: calibrated.basis };

  // The windows with the brightest model input (nuclei are bright in what the model reads, glass is
  // dark) hold the most cells to measure; the estimate runs on each at its own size, centred on
  // that sample, and their median is kept, so one window of keratin or a fold does not decide it.
  const side = Math.min(DIAMETER_WINDOW, source.width, source.height);
  const diameterWindows: Rectangle[] = [];
  for (const index of brightestWindows(input.data, windows)) {
    const sampled = windows[index]!;
    const window = {
      x: clamp(sampled.x + sampled.width / 2 - side / 2, 0, source.width - side),
      y: clamp(sampled.y + sampled.height / 2 - side / 2, 0, source.height - side),
      width: Math.min(side, source.width),
      height: Math.min(side, source.height),
    };
    // Windows that overlap would measure some of the same cells.
    const overlapping = diameterWindows.some((w) => Math.abs(w.x - window.x) < side && Math.abs(w.y - window.y) < side);
    if (!overlapping) diameterWindows.push(window);
    if (diameterWindows.length === diameterWindowCount(source.width * source.height, side)) break;
  }
  const estimates = [];
  for (const window of diameterWindows) {
    const region = await source.readRegion(window.x, window.y, window.width, window.height);
    const estimated = await segmentImage(region, model, { ...params, ...(modality && { modality: modality.modality }) }, { normalization, signal });
    estimates.push({ window, estimated });
  }
  const { window: diameterWindow, estimated } = estimates.sort((a, b) => a.estimated.diameter - b.estimated.diameter)[Math.floor((estimates.length - 1) / 2)]!;
  return {
    ...(modality && { modality }),
    normalization,
    diameter: estimated.diameter,
    ...(estimated.diameterEstimate && { diameterEstimate: estimated.diameterEstimate }),
    diameterBasis: estimated.diameterBasis,
    diameterWindow,
    sampledPixels: sampledPixels + diameterWindows.reduce((sum, w) => sum + w.width * w.height, 0),
    display,
  };
}

function clamp(value: number, low: number, high: number): number {
  return Math.round(Math.min(high, Math.max(low, value)));
}

/** Indices of the windows by the mean of their first model-input plane, brightest first, in the side-by-side input. */
function brightestWindows(plane: Float32Array, windows: Rectangle[]): number[] {
  const height = windows[0]!.height;
  const width = windows.reduce((sum, w) => sum + w.width, 0);
  const means: number[] = [];
  let left = 0;
  for (const window of windows) {
    let sum = 0;
    for (let y = 0; y < height; y++) for (let x = 0; x < window.width; x++) sum += plane[y * width + left + x]!;
    means.push(sum / (window.width * height));
    left += window.width;
  }
  return means.map((_, i) => i).sort((a, b) => means[b]! - means[a]! || a - b);
}
