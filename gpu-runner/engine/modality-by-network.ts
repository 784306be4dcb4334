// When the pixels leave the modality unsure (common/modality.ts readModality, `sure: false`: a gray
// image whose background lies just under the bright-field bound, a coloured one on a dark field
// whose colour neither clearly absorbs nor clearly emits), the data decides: the network reads a
// small centred crop once as the image was read and once the other way, and the way whose output
// is a confident set of cells is kept. Inverting the wrong way ruins a segmentation (nuclei become
// holes), so the rule is asked first and the network only where the rule is unsure: a sure reading
// costs nothing more than it did.
//
// Each way is run as segmentImage would run it: the model input made for that modality
// (model-input.ts), normalised by the crop's own percentiles, the diameter (a given one, the
// model's, or with "auto" the first guess from that way's input: diameter-guess.ts) setting the
// scale, one network pass on at most PROBE_SIDE² pixels at the network's scale (one call of the
// engine's tiling), and masks by Cellpose's pipeline with Cellpose's own defaults, flow-error
// check included (masks/compute-masks.ts). The score (scoreWay) says how confident a set of cells
// that is.
import type { DecodedImage } from "../../common/decode/index.ts";
import { cutRegion } from "../../common/decode/region.ts";
import { MAX_DIAMETER_PX } from "../../schema/work-limits.ts";
import { MIN_ESTIMATED_DIAMETER } from "./diameter.ts";
import { diameterGuessFromInput } from "./diameter-guess.ts";
import { runNetwork } from "./inference.ts";
import { computeMasks, DEFAULT_MASK_PARAMS } from "./masks/compute-masks.ts";
import type { LoadedModel } from "./model.ts";
import { type ModelInput, modelInput } from "./model-input.ts";
import type { Modality, ModalityDecision, ModalityReading } from "./modality.ts";
import { channelBounds, normalizeWithBounds } from "./normalize.ts";
import { resizePlanar } from "./resize.ts";

/** Side (px at the network's scale) of the centred crop each way is run on: one call of the network, 1/4 of a 1024² image's. */
const PROBE_SIDE = 512;
/** Side (image px) of the centred region the diameter is guessed on with diameter "auto" (the block survey's diameter window). */
const GUESS_SIDE = 1024;
/**
 * The other way replaces the reading only when its score is higher by this much: where neither
 * way finds cells (an empty field, debris) the likelier reading stands.
 */
const SWITCH_MARGIN = 0.1;
/** Masks whose equivalent diameter lies within this factor of the diameter the crop was scaled for count as cells (scoreWay). */
const PLAUSIBLE_SIZE_FACTOR = 3;
/** ModalityDecision.reason's limit (schema/modality.ts). */
const REASON_LIMIT = 300;

/** The segmentation parameters the check reads. */
/** What of segmentImage's parameters (segment.ts SegmentParams, not imported: segment.ts imports this module) the check uses. */
interface ProbeParams {
  diameter: "auto" | number | undefined;
  channels: number[] | undefined;
  modality: Modality | "auto";
  batchSize: number;
  tileOverlap: number;
  threads?: number;
}

/** How one way of reading the crop did: scoreWay's measures. */
interface WayScore {
  modality: Modality;
  /** separation × coverage, 0..1: see scoreWay. */
  score: number;
  /** Masks of a plausible size. */
  cells: number;
  /** Mean cell probability inside those masks minus outside them. */
  separation: number;
  /** Fraction of the network's foreground (cell-probability logit > 0) inside those masks. */
  coverage: number;
  /** The diameter (image px) the crop was scaled for. */
  diameter: number;
}

interface NetworkModalityChoice {
  decision: ModalityDecision;
  /** The way the pixels read the image, and the other way. */
  read: WayScore;
  other: WayScore;
}

interface ProbeHooks {
  /** Called once per network pass the check runs (tests count them). */
  onPass?: (modality: Modality) => void;
}

/**
 * The model input as modelInput makes it, except that an unsure reading is checked by the network
 * (modalityByNetwork) and the input made for the way it keeps. Sure readings, given modalities and
 * models that read channels as they are go through modelInput alone.
 */
export async function decidedModelInput(image: DecodedImage, model: LoadedModel, params: ProbeParams, hooks: ProbeHooks = {}): Promise<ModelInput> {
  let made: ModelInput | undefined = modelInput(image, model.manifest, params.channels, params.modality);
  const reading = made.reading;
  if (!reading || reading.sure) return made;
  const { decision } = await modalityByNetwork(image, model, params, reading, hooks);
  if (decision.modality === reading.modality) return { ...made, modality: decision };
  // The input made for the reading goes before the other is made: on a large image each is the image's size.
  made = undefined;
  return { ...modelInput(image, model.manifest, params.channels, decision.modality), modality: decision, reading };
}

// Exported for its test only (test/engine/modality-by-network.test.ts).
/** The way an unsure reading could be wrong: a dark-field reading's bright-field alternative (stained histology for a colour image), else fluorescence. */
export function otherWay(read: Modality, colour: boolean): Modality {
  if (read !== "fluorescence") return "fluorescence";
  return colour ? "histology" : "brightfield";
}

// Exported for its test only (test/engine/modality-by-network.test.ts).
/**
 * Runs the network on a centred crop of `image` read as `reading` says and the other way, and keeps
 * the way whose output is the more confident set of cells (by SWITCH_MARGIN over the reading's).
 * The decision is "detected", its reason the reading's and both scores.
 */
export async function modalityByNetwork(
  image: DecodedImage,
  model: LoadedModel,
  params: ProbeParams,
  reading: ModalityReading,
  hooks: ProbeHooks = {},
): Promise<NetworkModalityChoice> {
  const colour = (params.channels?.length ?? image.channels) >= 3;
  const read = await probeWay(image, model, params, reading.modality, hooks);
  const other = await probeWay(image, model, params, otherWay(reading.modality, colour), hooks);
  const switched = other.score > read.score + SWITCH_MARGIN;
  const [kept, against] = switched ? [other, read] : [read, other];
  const cells = (n: number) => `${n} ${n === 1 ? "cell" : "cells"}`;
  const scores = `score ${kept.score.toFixed(2)}, ${cells(kept.cells)}, against ${against.score.toFixed(2)}, ${cells(against.cells)}, as ${against.modality}`;
  const finding =
    switched || kept.score > SWITCH_MARGIN
      ? `the network found a confident set of cells read as ${kept.modality} (${scores})`
      : `the network found no clearer cells either way: kept ${kept.modality} (${scores})`;
  const room = REASON_LIMIT - finding.length - "unsure by the image (); ".length;
  const why = reading.reason.length <= room ? reading.reason : `${reading.reason.slice(0, Math.max(0, room - 1))}…`;
  return { decision: { modality: kept.modality, source: "detected", reason: `unsure by the image (${why}); ${finding}` }, read, other };
}

/** One way of reading the image: its centred crop through the network and Cellpose's masks, scored. */
async function probeWay(image: DecodedImage, model: LoadedModel, params: ProbeParams, way: Modality, hooks: ProbeHooks): Promise<WayScore> {
  const { manifest } = model;
  const region = centred(image, GUESS_SIDE, GUESS_SIDE);
  const input = modelInput(region, manifest, params.channels, way).image;
  normalizeWithBounds(input, channelBounds(input, manifest.normalization), input.data);
  let diameter = params.diameter === "auto" || params.diameter === undefined ? manifest.diameter : params.diameter;
  if (params.diameter === "auto")
    diameter = manifest.trainedObjectDiameter ?? diameterGuessFromInput(input.data, manifest.channels, input.width, input.height, way) ?? manifest.diameter;
  diameter = Math.min(MAX_DIAMETER_PX, Math.max(MIN_ESTIMATED_DIAMETER, diameter));
  const scale = manifest.diameter / diameter;
  const crop = centred(input, Math.round(PROBE_SIDE / scale), Math.round(PROBE_SIDE / scale));
  const width = Math.max(1, Math.round(crop.width * scale));
  const height = Math.max(1, Math.round(crop.height * scale));
  const scaled =
    width === crop.width && height === crop.height ? crop.data : resizePlanar(crop.data, manifest.channels, crop.width, crop.height, width, height);
  const outputs = await runNetwork(scaled, manifest.channels, width, height, model, { batchSize: params.batchSize, overlap: params.tileOverlap });
  hooks.onPass?.(way);
  const plane = width * height;
  const cellprob = outputs.subarray(2 * plane);
  // Cellpose's own mask defaults, flow-error check on, whatever the model's mask defaults: masks
  // whose flows do not converge as a cell's do are not counted as cells.
  const { labels, count } = computeMasks(outputs.slice(0, 2 * plane), cellprob, width, height, { ...DEFAULT_MASK_PARAMS, threads: params.threads });
  return { modality: way, diameter, ...scoreWay(cellprob, labels, count, manifest.diameter) };
}

// Exported for its test only (test/engine/modality-by-network.test.ts).
/**
 * How confident a set of cells the network's output is, 0..1, from the cell-probability logits and
 * the masks made from them (at the network's scale, where cells should be `diameter` px across).
 *
 * Cellpose reads its cellprob output as a logit: a pixel is in a cell where it is above 0
 * (sigmoid 0.5), and its mask pipeline keeps only masks whose flows agree with their shape (flow
 * error at most 0.4). On the way that suits the network, nuclei come out as masks of about the
 * size the crop was scaled for, with probabilities near 1 inside and near 0 outside, and nearly all
 * of the foreground lies in such masks. Read the wrong way, nuclei are holes in a bright field: the
 * network finds nothing, or calls the field foreground in sheets that become oversized or
 * flow-inconsistent masks (dropped by the pipeline) or fragments of odd sizes. So:
 *
 * - cells: masks whose equivalent diameter is within PLAUSIBLE_SIZE_FACTOR of `diameter`;
 * - separation = mean sigmoid(logit) inside the cells − mean outside them (pixels of dropped or
 *   implausible masks count as outside), clamped at 0: how sharply the network tells cell from
 *   background;
 * - coverage = the fraction of the foreground (logit > 0) inside the cells: how much of what the
 *   network calls cell it could make into cells;
 * - score = separation × coverage. An empty output scores 0; so does a foreground no cell explains.
 *
 * Both are fractions of the crop, not counts, so a crop with a few cells and one with many score
 * alike, and neither grows with the crop's size.
 */
export function scoreWay(cellprob: Float32Array, labels: Uint32Array, count: number, diameter: number): Omit<WayScore, "modality" | "diameter"> {
  const area = new Float64Array(count + 1);
  for (let i = 0; i < labels.length; i++) area[labels[i]!]!++;
  const smallest = (Math.PI / 4) * (diameter / PLAUSIBLE_SIZE_FACTOR) ** 2;
  const largest = (Math.PI / 4) * (diameter * PLAUSIBLE_SIZE_FACTOR) ** 2;
  const cell = new Uint8Array(count + 1);
  let cells = 0;
  for (let k = 1; k <= count; k++) {
    if (area[k]! < smallest || area[k]! > largest) continue;
    cell[k] = 1;
    cells++;
  }
  let inside = 0,
    insideCount = 0,
    outside = 0,
    foreground = 0,
    covered = 0;
  for (let i = 0; i < labels.length; i++) {
    const logit = cellprob[i]!;
    const probability = 1 / (1 + Math.exp(-logit));
    const inCell = cell[labels[i]!] === 1;
    if (inCell) {
      inside += probability;
      insideCount++;
    } else outside += probability;
    if (logit > 0) {
      foreground++;
      if (inCell) covered++;
    }
  }
  const outsideCount = labels.length - insideCount;
  const separation = insideCount === 0 ? 0 : Math.max(0, inside / insideCount - (outsideCount === 0 ? 0 : outside / outsideCount));
  const coverage = foreground === 0 ? 0 : covered / foreground;
  return { score: separation * coverage, cells, separation, coverage };
}

/** The centred w×h part of an image (all of it along a side it does not exceed). */
function centred(image: DecodedImage, w: number, h: number): DecodedImage {
  const width = Math.max(1, Math.min(image.width, w));
  const height = Math.max(1, Math.min(image.height, h));
  if (width === image.width && height === image.height) return image;
  const all = Array.from({ length: image.channels }, (_, c) => c);
  return cutRegion(image, Math.floor((image.width - width) / 2), Math.floor((image.height - height) / 2), width, height, all);
}
