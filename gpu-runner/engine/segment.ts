// The engine's entry point: a decoded image and a loaded model in; labels, ROIs with measurements,
// confluency and per-stage timings out. The runner calls exactly segmentImage.
import type { Roi } from "../../schema/roi.ts";
import { medianObjectDiameter } from "./object-diameter.ts";
import type { DecodedImage } from "../../common/decode/index.ts";
import { MIN_ESTIMATED_DIAMETER } from "./diameter.ts";
import { diameterGuessFromInput, firstPassDiameter } from "./diameter-guess.ts";
import { runNetwork } from "./inference.ts";
import { computeMasksInThread } from "./compute-thread/compute-thread.ts";
import { atImageResolution, DEFAULT_MASK_PARAMS, type MaskParams, type MaskResult } from "./masks/compute-masks.ts";
import type { LoadedModel } from "./model.ts";
import { decidedModelInput } from "./modality-by-network.ts";
import { MODALITIES } from "./modality.ts";
import type { Modality, ModalityDecision } from "./modality.ts";
import { channelBounds, normalizeWithBounds } from "./normalize.ts";
import type { ChannelBounds } from "./normalize.ts";
import { resizePlanar } from "./resize.ts";
import { confluency, measureRois } from "../../common/geometry/roi-measure.ts";
import { InputError } from "./faults.ts";
import { calibratedDiameter, estimatedBasis, givenBasis, type KnownPixelSize, modelBasis } from "./diameter-basis.ts";
import type { DiameterBasis } from "../../schema/diameter-basis.ts";
import { MAX_AUTO_ENLARGEMENT, MAX_DIAMETER_PX, MAX_NITER } from "../../schema/work-limits.ts";

export interface SegmentParams extends MaskParams {
  /**
   * Typical cell diameter in this image (px); the image is rescaled by model diameter / this.
   * "auto" estimates it (diameter.ts, then at most one more network pass); undefined = the model's (no rescaling).
   */
  diameter: "auto" | number | undefined;
  /** Image channels fed to the model's channels, in order (missing ones are zero). Default: all of them (model-input.ts). */
  channels: number[] | undefined;
  /** One-channel models: the modality the input is made for (modality.ts); "auto" detects it from the image. */
  modality: Modality | "auto";
  /** Tiles per network call. */
  batchSize: number;
  /** Minimum tile overlap as a fraction of the tile. */
  tileOverlap: number;
  /** Test-time flip averaging (Cellpose's `augment`): four network runs per tile, averaged. */
  augment: boolean;
  /** The image's pixel size where known: with diameter "auto" it maps the model's object size in µm to pixels (diameter-basis.ts). */
  pixelSize?: KnownPixelSize;
}

export const DEFAULT_SEGMENT_PARAMS: SegmentParams = {
  ...DEFAULT_MASK_PARAMS,
  diameter: undefined,
  channels: undefined,
  modality: "auto",
  batchSize: 8,
  tileOverlap: 0.1,
  augment: false,
};

export type SegmentStage = "normalize" | "diameter" | "rescale" | "network" | "masks" | "rois";

interface SegmentResult {
  width: number;
  height: number;
  /** Label image, row-major; 0 = background, roi.index + 1 = that ROI. */
  labels: Uint32Array;
  rois: Roi[];
  /** Foreground fraction. */
  confluency: number;
  /** Milliseconds per stage. */
  timings: Record<SegmentStage, number>;
  /** Diameter (px, this image's pixels) the masks were computed at: the given one, the model's, or the estimate. */
  diameter: number;
  /** With diameter "auto": how it was found. */
  diameterEstimate?: DiameterEstimate;
  /** Which diameter it ran at and why, in words. */
  diameterBasis: DiameterBasis;
  /** One-channel models: the modality the input was made for, and whether it was detected or given. */
  modality?: ModalityDecision;
  /** With `keepNetworkOutputs`: the outputs the masks were made from, planar [3, H, W] at the image's size (dY, dX, cellprob logit). */
  networkOutputs?: Float32Array;
}

interface SegmentOptions {
  onProgress?: (fraction: number, stage: string) => void;
  /** Return the network outputs too, so that other mask parameters can be tried without the network (eval's sweeps). */
  keepNetworkOutputs?: boolean;
  /**
   * The image is already what the model reads, made for this modality (training's prepared images,
   * modality.ts): it goes to the network unchanged, and the modality picks the diameter estimate and
   * the model's mask defaults as it would for the original image.
   */
  preparedFor?: Modality;
  /**
   * Per model-input channel, the values mapped to 0 and 1 instead of this image's own percentiles:
   * a block of a larger image is scaled as the whole image is (blocks/image-survey.ts).
   */
  normalization?: ChannelBounds;
  /** Stops the segmentation: its mask stage at once (its compute thread is terminated), the rest before its next stage. */
  signal?: AbortSignal;
}

export interface DiameterEstimate {
  /**
   * First guess from image statistics (undefined: no foreground structure, the model's diameter was
   * used; or the model carries the size of its training objects, below).
   */
  fromImage: number | undefined;
  /** First guess from the model: the median object diameter of a fine-tuned model's training labels. */
  fromModel?: number;
  /** Median equivalent diameter of the masks of the first network pass (undefined: no masks). */
  fromMasks: number | undefined;
  /** Network passes run: 1, 2 when the masks disagreed with the first guess, 3 when nothing was found at it and the model's own scale measured. */
  passes: number;
}

/**
 * With diameter "auto", a second pass runs when the first pass's masks measure a diameter off the
 * first guess by more than this factor (Cellpose 1–3 rescale when the size model disagrees).
 */
const AUTO_DIAMETER_TOLERANCE = 1.2;
/** Largest factor by which an image may be enlarged for the network (diameter much smaller than the model's). */
const MAX_UPSCALE_PIXELS = 2 ** 28;

/**
 * Segments one image the way Cellpose's pipeline does: normalise, size, network, masks, outlines.
 * Each step is a method of ImageSegmentation below, in that order.
 */
export async function segmentImage(
  image: DecodedImage,
  model: LoadedModel,
  params: Partial<SegmentParams> = {},
  options: SegmentOptions = {},
): Promise<SegmentResult> {
  const run = new ImageSegmentation(image, model, params, options);
  await run.normalise();
  run.size();
  await run.network();
  const { labels, count } = await run.masks();
  return run.outlines(labels, count);
}

/** One network pass: outputs (planar [3, h, w]) of the image rescaled by `scale`. */
interface NetworkPass {
  outputs: Float32Array;
  scale: number;
  width: number;
  height: number;
}

class ImageSegmentation {
  readonly #image: DecodedImage;
  readonly #model: LoadedModel;
  readonly #requested: Partial<SegmentParams>;
  readonly #options: SegmentOptions;
  #params: SegmentParams;
  readonly #timings: Record<SegmentStage, number> = { normalize: 0, diameter: 0, rescale: 0, network: 0, masks: 0, rois: 0 };
  #lapStart = performance.now();
  #reported = 0;
  // Large intermediates are held in fields and dropped as soon as they are used up, so peak memory
  // on big images stays near image + network outputs.
  /** The model input, normalised; dropped once the last network pass has read it. */
  #input: DecodedImage | undefined;
  #modality: ModalityDecision | undefined;
  #calibrated: ReturnType<typeof calibratedDiameter>;
  /** The diameter (px, this image's) the network runs at, then the masks are computed at. */
  #diameter = 0;
  #estimate: DiameterEstimate | undefined;
  #pass: NetworkPass | undefined;
  /** Masks at the image's size, when a pass at full scale made them while measuring its objects. */
  #masks: MaskResult | undefined;
  #keptOutputs: Float32Array | undefined;

  constructor(image: DecodedImage, model: LoadedModel, params: Partial<SegmentParams>, options: SegmentOptions) {
    validate({ ...DEFAULT_SEGMENT_PARAMS, ...params });
    this.#image = image;
    this.#model = model;
    this.#requested = params;
    this.#options = options;
    this.#params = { ...DEFAULT_SEGMENT_PARAMS, ...params };
  }

  /**
   * The model input: the image's channels as the model reads them, for the modality read or
   * given, scaled by percentiles (or by a whole image's bounds, for a block of it).
   */
  async normalise(): Promise<void> {
    const { manifest } = this.#model;
    const { preparedFor, normalization } = this.#options;
    this.#report(0, "normalize");
    if (preparedFor && this.#image.channels !== manifest.channels)
      throw new Error(`a prepared image has the model's ${manifest.channels} channel(s), this one ${this.#image.channels}`);
    // An unsure modality reading runs the network on a small crop both ways first (modality-by-network.ts); its time counts as "normalize".
    const { image: input, modality } = preparedFor
      ? { image: { ...this.#image, data: this.#image.data.slice() }, modality: { modality: preparedFor, source: "given" as const } }
      : await decidedModelInput(this.#image, this.#model, this.#params);
    this.#input = input;
    this.#modality = modality;
    // The model's own defaults for this modality fill in what the request left out.
    const modelDefaults = modality ? manifest.maskDefaults?.[modality.modality] : undefined;
    if (modelDefaults) this.#params = { ...DEFAULT_SEGMENT_PARAMS, ...modelDefaults, ...this.#requested };
    normalizeWithBounds(input, normalization ?? channelBounds(input, manifest.normalization), input.data);
    this.#lap("normalize");
  }

  /**
   * The diameter to run at: the one given, the model's, the one the model learned in µm on a
   * calibrated image, or with "auto" a first guess that the network pass then checks.
   */
  size(): void {
    const input = this.#usableInput();
    const { manifest } = this.#model;
    const p = this.#params;
    const modality = this.#modality?.modality;
    this.#calibrated = p.diameter === "auto" ? calibratedDiameter(manifest, modality, p.pixelSize) : undefined;
    const diameter = this.#calibrated?.diameter ?? p.diameter;
    this.#params = { ...p, diameter };
    this.#diameter = diameter === "auto" || diameter === undefined ? manifest.diameter : diameter;
    if (diameter === "auto") {
      const learned = manifest.trainedObjectDiameter;
      const { width, height } = this.#image;
      const fromImage = learned === undefined ? diameterGuessFromInput(input.data, manifest.channels, width, height, modality) : undefined;
      this.#estimate = { fromImage, ...(learned !== undefined && { fromModel: learned }), fromMasks: undefined, passes: 1 };
      const guess = learned ?? firstPassDiameter(fromImage, modality, manifest.diameter);
      this.#diameter = guess === undefined ? manifest.diameter : this.#settle(guess);
    }
    this.#lap("diameter");
  }

  /**
   * The network at the chosen size. With "auto", the masks of that pass measure the objects, and
   * where they measure a size off the guess the network runs again at theirs (Cellpose 1–3
   * rescale when the size model disagrees).
   */
  async network(): Promise<void> {
    this.#pass = await this.#networkPass(this.#diameter, 0);
    const estimate = this.#estimate;
    if (estimate) {
      this.#report(0.05 + 0.75 * this.#passShare, "diameter");
      const unconfirmed = this.#unconfirmedDiameter();
      let fromMasks = await this.#measureObjects(this.#pass);
      // Nothing found at the image's guess is not yet an empty field: on stained tissue the statistics
      // can read glass or keratin as objects ten times the nuclei's size (240 px on 20x skin whose
      // nuclei measure 11), and a pass at that scale sees no nucleus. The model's own scale measures again.
      if (fromMasks === undefined && differs(this.#diameter, unconfirmed)) {
        await this.#passAgain(unconfirmed);
        fromMasks = await this.#measureObjects(this.#usablePass());
      }
      estimate.fromMasks = fromMasks;
      this.#lap("diameter");
      // No objects at the model's scale either leaves the guess unconfirmed (on an empty field it is
      // the scale of noise): the last pass then runs at the model's own scale, as without a diameter.
      const target = fromMasks === undefined ? unconfirmed : this.#settle(fromMasks);
      if (differs(target, this.#diameter)) await this.#passAgain(target);
    }
    this.#input = undefined;
  }

  /** The label image at the image's own size, from the last pass (or kept from measuring it). */
  async masks(): Promise<MaskResult> {
    this.#report(0.8, "masks");
    const masks = this.#masks ?? (await this.#masksAtImageSize(this.#usablePass()));
    this.#lap("masks");
    return masks;
  }

  /** Each mask's outline and measurements, and what the run decided on the way. */
  outlines(labels: Uint32Array, count: number): SegmentResult {
    const { width, height } = this.#image;
    const p = this.#params;
    const diameter = this.#diameter;
    this.#report(0.95, "rois");
    const rois = measureRois(labels, width, height, count);
    const result: SegmentResult = {
      width,
      height,
      labels,
      rois,
      confluency: confluency(labels),
      timings: this.#timings,
      diameter,
      ...(this.#estimate ? { diameterEstimate: this.#estimate } : {}),
      diameterBasis: this.#calibrated
        ? this.#calibrated.basis
        : this.#estimate
          ? estimatedBasis(diameter, p.pixelSize !== undefined)
          : p.diameter === undefined
            ? modelBasis(diameter)
            : givenBasis(diameter),
      ...(this.#modality ? { modality: this.#modality } : {}),
      ...(this.#keptOutputs ? { networkOutputs: this.#keptOutputs } : {}),
    };
    this.#lap("rois");
    this.#report(1, "done");
    return result;
  }

  /** Progress: 0.05..0.8 for network passes (split in two with "auto"), 0.8..0.95 for masks. */
  get #passShare(): number {
    return this.#estimate ? 0.5 : 1;
  }

  /**
   * An estimate stays within what a request may name (MAX_DIAMETER_PX: a block's margins grow with
   * it), and above the size that would enlarge the image past what the network may read.
   */
  #boundedAutoDiameter(estimate: number): number {
    const { manifest } = this.#model;
    const { width, height } = this.#image;
    const smallest = manifest.diameter * Math.max(1 / MAX_AUTO_ENLARGEMENT, Math.sqrt((width * height * manifest.channels) / MAX_UPSCALE_PIXELS));
    return Math.min(MAX_DIAMETER_PX, Math.max(estimate, smallest));
  }

  /**
   * The diameter to run at for a measured or guessed size. A fine-tuned model knows the size of the
   * objects it learned from, in its users' own pixels: that size is where "auto" starts and what it
   * keeps unless the masks measure otherwise. Sizes within the model's trained range are followed
   * too (on training images that rescaling gained 0.04 AP@0.5 on brightfield and 0.014 on
   * histology, and changed fluorescence by at most 0.003; README).
   */
  #settle(size: number): number {
    const learned = this.#model.manifest.trainedObjectDiameter;
    const near = learned !== undefined && !differs(size, learned);
    return this.#boundedAutoDiameter(near ? learned : size);
  }

  /** The diameter "auto" falls back to when no pass finds objects: the learned size, else the model's. */
  #unconfirmedDiameter(): number {
    const { diameter, trainedObjectDiameter: learned } = this.#model.manifest;
    return learned === undefined ? diameter : this.#boundedAutoDiameter(learned);
  }

  /** Runs the network again at `at`, the last pass's outputs dropped first (at 8192x8192 unscaled, 805 MB each). */
  async #passAgain(at: number): Promise<void> {
    this.#diameter = at;
    if (this.#estimate) this.#estimate.passes++;
    this.#masks = undefined;
    const last = this.#usablePass();
    last.outputs = new Float32Array(0);
    this.#pass = await this.#networkPass(at, 0.5);
  }

  /** Network outputs (planar [3, h, w]) with the image rescaled so that `at` becomes the model's diameter. */
  async #networkPass(at: number, progressFrom: number): Promise<NetworkPass> {
    const { manifest } = this.#model;
    const { width, height } = this.#image;
    const p = this.#params;
    const { signal } = this.#options;
    const scale = manifest.diameter / at;
    const scaledWidth = Math.max(1, Math.round(width * scale));
    const scaledHeight = Math.max(1, Math.round(height * scale));
    if (scaledWidth * scaledHeight * manifest.channels > MAX_UPSCALE_PIXELS) {
      throw new InputError(`diameter ${at} would rescale the image to ${scaledWidth}x${scaledHeight}, too large`);
    }
    signal?.throwIfAborted();
    this.#lapStart = performance.now();
    const data = this.#usableInput().data;
    let networkInput: Float32Array | undefined = scale === 1 ? data : resizePlanar(data, manifest.channels, width, height, scaledWidth, scaledHeight);
    this.#lap("rescale");
    const progress = (f: number) => this.#report(0.05 + 0.75 * (progressFrom + this.#passShare * f), "network");
    progress(0);
    const outputs = await runNetwork(networkInput, manifest.channels, scaledWidth, scaledHeight, this.#model, {
      batchSize: p.batchSize,
      overlap: p.tileOverlap,
      flipAverage: p.augment,
      onProgress: progress,
      signal,
    });
    networkInput = undefined;
    this.#lap("network");
    return { outputs, scale, width: scaledWidth, height: scaledHeight };
  }

  /**
   * The median diameter of the objects a pass finds (undefined: none). On a downsampled pass the
   * masks are computed at the network's resolution, which is cheaper and, objects being near the
   * model's size there, as good; otherwise they are the image's and are kept for the result.
   */
  async #measureObjects(pass: NetworkPass): Promise<number | undefined> {
    let median: number | undefined;
    if (pass.scale < 1) {
      // The masks' thread takes a copy: this pass's outputs may still make the final masks.
      const small = await computeMasksInThread(pass.outputs.slice(), pass.width, pass.height, this.#params, this.#options.signal);
      if (small.count > 0) median = medianObjectDiameter(small.labels) / pass.scale;
    } else {
      this.#masks = await this.#masksAtImageSize(pass);
      this.#lap("masks");
      if (this.#masks.count > 0) median = medianObjectDiameter(this.#masks.labels);
    }
    return median === undefined ? undefined : Math.max(MIN_ESTIMATED_DIAMETER, median);
  }

  /**
   * Masks at the image's own resolution, as Cellpose resizes flows back before dynamics. The
   * outputs go to the masks' thread (handed over, not copied): the pass keeps none of them.
   */
  async #masksAtImageSize(pass: NetworkPass): Promise<MaskResult> {
    const { width, height } = this.#image;
    this.#lapStart = performance.now();
    const outputs = pass.scale === 1 ? pass.outputs : resizePlanar(pass.outputs, 3, pass.width, pass.height, width, height);
    pass.outputs = new Float32Array(0);
    if (this.#options.keepNetworkOutputs) this.#keptOutputs = outputs.slice();
    this.#lap("rescale");
    return computeMasksInThread(outputs, width, height, atImageResolution(this.#params, pass.scale), this.#options.signal);
  }

  #usableInput(): DecodedImage {
    if (!this.#input) throw new Error("segmentImage's steps run in order: normalise comes first");
    return this.#input;
  }

  #usablePass(): NetworkPass {
    if (!this.#pass) throw new Error("segmentImage's steps run in order: the network before the masks");
    return this.#pass;
  }

  #lap(stage: SegmentStage): void {
    const now = performance.now();
    this.#timings[stage] += now - this.#lapStart;
    this.#lapStart = now;
  }

  /** Never backwards: a third pass (nothing found at the guess) reports over the second's range again. */
  #report(fraction: number, stage: string): void {
    this.#reported = Math.max(this.#reported, Math.min(1, Math.max(0, fraction)));
    this.#options.onProgress?.(this.#reported, stage);
  }
}

/** Whether two sizes differ by more than the tolerance "auto" allows. */
function differs(a: number, b: number): boolean {
  return Math.abs(Math.log(a / b)) > Math.log(AUTO_DIAMETER_TOLERANCE);
}

function validate(p: SegmentParams): void {
  const problems: string[] = [];
  if (p.diameter !== undefined && p.diameter !== "auto" && !(typeof p.diameter === "number" && p.diameter > 0 && Number.isFinite(p.diameter)))
    problems.push('diameter must be a positive number or "auto"');
  if (p.modality !== "auto" && !MODALITIES.includes(p.modality)) problems.push(`modality must be "auto" or one of ${MODALITIES.join(", ")}`);
  if (!Number.isFinite(p.cellprobThreshold)) problems.push("cellprobThreshold must be a number");
  if (!(p.flowThreshold >= 0)) problems.push("flowThreshold must be >= 0");
  if (!(Number.isInteger(p.minSize) && p.minSize >= 0)) problems.push("minSize must be a non-negative integer");
  if (!(p.maxSizeFraction > 0 && p.maxSizeFraction <= 1)) problems.push("maxSizeFraction must be in (0, 1]");
  if (!(Number.isInteger(p.niter) && p.niter >= 0 && p.niter <= MAX_NITER)) problems.push(`niter must be an integer in 0..${MAX_NITER}`);
  if (!(Number.isInteger(p.batchSize) && p.batchSize >= 1 && p.batchSize <= 256)) problems.push("batchSize must be an integer in 1..256");
  if (!(p.tileOverlap >= 0 && p.tileOverlap < 0.5)) problems.push("tileOverlap must be in [0, 0.5)");
  if (typeof p.augment !== "boolean") problems.push("augment must be true or false");
  if (problems.length) throw new InputError(`invalid segmentation parameters: ${problems.join("; ")}`);
}
