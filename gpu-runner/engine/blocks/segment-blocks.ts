// Segments an image of any size block by block in bounded memory (the approach of Cellpose's
// distributed segmentation and StarDist's predict_instances_big, written for this engine): the
// image is surveyed once (image-survey.ts), cut into cores with margins (block-grid.ts), each block
// is read from the source and segmented by the single-image pipeline with the survey's modality,
// normalisation and diameter, and each block keeps the cells whose centroid lies in its core. A
// cell cut by a seam is whole in the block that keeps it (margins are at least twice the
// diameter), and no cell is kept twice. Cells leave in raster order (raster-order.ts), so the ROI
// artifact and exports stream them; the label image of the whole is never made.
import type { Roi, RoiCell } from "../../../schema/roi.ts";
import type { DecodedImage } from "../../../common/decode/index.ts";
import type { LoadedModel } from "../model.ts";
import type { ModalityDecision } from "../modality.ts";
import { attachCells } from "../cell-expansion.ts";
import { measureIntensity } from "../intensity.ts";
import { segmentImage } from "../segment.ts";
import type { DiameterBasis } from "../../../schema/diameter-basis.ts";
import type { DiameterEstimate, SegmentParams, SegmentStage } from "../segment.ts";
import { blockGrid, contains } from "./block-grid.ts";
import type { Block, BlockGrid } from "./block-grid.ts";
import { blockIsGlass } from "./glass.ts";
import { type ImageSurvey, SURVEY_WINDOW, surveyImage } from "./image-survey.ts";
import type { RegionSource } from "./region-source.ts";
import { RasterOrderQueue } from "./raster-order.ts";
import { expansionReachPx, MAX_AUTO_ENLARGEMENT } from "../../../schema/work-limits.ts";
import { InputError } from "../faults.ts";
import type { DisplayRange } from "../../../common/stretch.ts";

/**
 * Bytes a block pixel costs at the network's scale: the model input, the network's three output
 * planes before and after resizing, the flow following and the labels (the single-image path
 * peaked at 34 bytes a pixel on 8192², README), with room for colour input.
 */
const BLOCK_BYTES_PER_PIXEL = 64;
/**
 * The memory blocks may take by default (the runner's and the CLI's peak goal is 1.5 GB in all):
 * at 768 MB the runner peaked at 1546 MiB on a 32768² slide, at 640 MB at 1376 MiB (docs/benchmarks.md, bench:big-service).
 */
export const DEFAULT_BLOCK_MEMORY_BYTES = 640 * 2 ** 20;
/**
 * Network input pixels up to which an image is segmented in one pass by the CLI and the runner
 * (4096²: about 0.6 GB at the single-image path's 34 bytes a pixel); larger ones block by block.
 */
export const SINGLE_PASS_PIXELS = 4096 * 4096;

/**
 * Whether a `pixels`-pixel image is segmented in one pass: the single-image path holds the
 * network's input and outputs whole, at the network's scale, so it is the image enlarged as far
 * as the request may take it that must fit in `singlePassPixels` (a given diameter's scale; with
 * "auto", which may settle on small nuclei, MAX_AUTO_ENLARGEMENT). A 16-MP slide whose nuclei are
 * estimated at 13.7 px for a 24-px model peaked at 3 GB in one pass.
 */
export function fitsOnePass(pixels: number, diameter: number | undefined, modelDiameter: number, singlePassPixels: number): boolean {
  const enlargement = diameter === undefined ? MAX_AUTO_ENLARGEMENT : Math.max(1, modelDiameter / diameter);
  return pixels * enlargement ** 2 <= singlePassPixels;
}
/** Margin around each core, in cell diameters (the seam merge needs a kept cell whole in its block). */
const MARGIN_DIAMETERS = 2;
const MIN_CORE_SIDE = 256;

interface BlockwiseOptions {
  /** Core side in pixels; default: the largest whose block fits `memoryBudgetBytes`. */
  coreSide?: number;
  memoryBudgetBytes?: number;
  onProgress?: (fraction: number, stage: string) => void;
  /** Receives the cells in raster order, indexed from 0 across the image, as soon as no later block can precede them. */
  onCells: (rois: Roi[]) => void | Promise<void>;
  /** Called after each block. */
  onBlock?: (block: Block, index: number, total: number) => void;
  /** Each block's pixels as read, before segmenting (the preview is made from them: its core's pixels, once each). */
  onRead?: (region: DecodedImage, block: Block) => void;
  /**
   * Give each cell its intensities (Roi.intensity, intensity.ts) from the block's original pixels:
   * a kept cell is whole in its block, so they are the whole image's.
   */
  measureIntensity?: boolean;
  /**
   * Grow each nucleus into its cell (cell-expansion.ts) by `distance`, in units of a pixel of
   * sx × sy. A cell is decided by the nuclei within twice the distance of its nucleus, so the
   * margins grow by that much: a kept nucleus's cell and every nucleus competing for its pixels
   * are then segmented in its block as in the whole image.
   */
  cellExpansion?: { distance: number; sx: number; sy: number };
  /** Stops the work: a block's mask stage at once, anything else before its next stage. */
  signal?: AbortSignal;
}

interface BlockwiseResult {
  width: number;
  height: number;
  cellCount: number;
  /** Sum of the kept cells' areas over the image's pixels. */
  confluency: number;
  diameter: number;
  diameterEstimate?: DiameterEstimate;
  diameterBasis: DiameterBasis;
  modality?: ModalityDecision;
  blocks: number;
  /** Blocks with no signal, which skipped the network and the masks. */
  glassBlocks: number;
  coreSide: number;
  margin: number;
  /** How the image is shown, from the survey's sample windows (image-survey.ts): its preview's stretch. */
  display?: DisplayRange[];
  /** Milliseconds per stage, summed over blocks, plus reading, the survey and the intensities. */
  timings: Record<SegmentStage | "read" | "survey" | "intensity" | "cells", number>;
}

// Exported for its test only (test/engine/segment-blocks.test.ts).
/**
 * The largest core side whose block (core and margins) at the network's scale fits the budget, and
 * never below MIN_CORE_SIDE. The margins count in the budget: a block whose margins alone blow it is
 * refused (an InputError, before anything is read) rather than run far past the budget with every
 * pixel read many times over; below that, the core's floor exceeds the budget by at most its own share.
 */
export function coreSideFor(memoryBudgetBytes: number, margin: number, networkScale: number): number {
  const bytesPerPixel = BLOCK_BYTES_PER_PIXEL * Math.max(1, networkScale) ** 2;
  const blockSide = Math.floor(Math.sqrt(memoryBudgetBytes / bytesPerPixel));
  if (2 * margin > blockSide) {
    throw new InputError(
      `block margins of ${margin} px (twice the diameter and twice the cell expansion's reach) alone need ` +
        `${mebibytes((2 * margin) ** 2 * bytesPerPixel)} MiB, past the block memory of ${mebibytes(memoryBudgetBytes)} MiB`,
    );
  }
  return Math.max(MIN_CORE_SIDE, blockSide - 2 * margin);
}

// Exported for its test only (test/engine/segment-blocks.test.ts).
/**
 * A row-sequential source (a PNG, a strip TIFF) is read a band at a time: the blocks of one block
 * row read the same rows, and the next band starts inside this one's bottom margin, so the source
 * keeps a band's rows (`rowBytes` each) and every row is decoded once. The band counts in the
 * budget beside the block: the core side is the largest whose block and band fit together. Where
 * even a core of MIN_CORE_SIDE with its band does not fit, the blocks are sized as for a source read
 * at random and the source keeps what rows the rest of the budget holds (its bands narrower than the
 * image: a row may then be decoded again, up to the job's read cap, MAX_READ_FACTOR).
 */
export function bandLayout(
  memoryBudgetBytes: number,
  margin: number,
  networkScale: number,
  rowBytes: number,
): { coreSide: number; keptRows: number; fullBands: boolean } {
  const bytesPerPixel = BLOCK_BYTES_PER_PIXEL * Math.max(1, networkScale) ** 2;
  // bytesPerPixel * s^2 + rowBytes * s <= budget, s the block's side with its margins.
  const side = Math.floor((-rowBytes + Math.sqrt(rowBytes ** 2 + 4 * bytesPerPixel * memoryBudgetBytes)) / (2 * bytesPerPixel));
  if (side - 2 * margin >= MIN_CORE_SIDE) return { coreSide: side - 2 * margin, keptRows: side, fullBands: true };
  const coreSide = coreSideFor(memoryBudgetBytes, margin, networkScale);
  const left = memoryBudgetBytes - (coreSide + 2 * margin) ** 2 * bytesPerPixel;
  return { coreSide, keptRows: Math.max(0, Math.floor(left / rowBytes)), fullBands: false };
}

const mebibytes = (bytes: number) => Math.ceil(bytes / 2 ** 20);

/** What every block of an image shares: the survey's modality, normalisation and diameter, and the grid. */
export interface BlockPlan {
  width: number;
  height: number;
  survey: ImageSurvey;
  /** The diameter (px) blocks run at: the survey's, else the model's. */
  diameter: number;
  coreSide: number;
  margin: number;
  grid: BlockGrid;
}

interface PlanOptions {
  coreSide?: number;
  memoryBudgetBytes?: number;
  cellExpansion?: BlockwiseOptions["cellExpansion"];
  signal?: AbortSignal;
}

/**
 * Surveys the image and cuts it into blocks sized to the memory budget, the margins wide enough for
 * the survey's diameter and the cell expansion. A row-sequential source is told to keep a band of
 * rows, so blocks read one after another decode each row once.
 */
export async function planBlocks(source: RegionSource, model: LoadedModel, params: Partial<SegmentParams>, options: PlanOptions = {}): Promise<BlockPlan> {
  const { width, height } = source;
  const budget = options.memoryBudgetBytes ?? DEFAULT_BLOCK_MEMORY_BYTES;
  // The survey's windows of one row share their rows: kept, they are decoded once.
  if (source.rowBytes && source.keepRows) source.keepRows(Math.min(SURVEY_WINDOW, Math.floor(budget / source.rowBytes)));
  const survey = await surveyImage(source, model, params, options.signal);
  const diameter = survey.diameter ?? model.manifest.diameter;
  const expansion = options.cellExpansion;
  const reach = expansion ? expansionReachPx(expansion.distance, expansion.sx, expansion.sy) : 0;
  const margin = Math.ceil(MARGIN_DIAMETERS * diameter) + 2 * reach;
  const networkScale = model.manifest.diameter / diameter;
  let coreSide: number;
  if (source.rowBytes && source.keepRows) {
    const bands = bandLayout(budget, margin, networkScale, source.rowBytes);
    coreSide = options.coreSide ?? bands.coreSide;
    // A band: its blocks' rows, core and both margins (given a core side, the band it needs, as far as the budget allows).
    source.keepRows(options.coreSide ? Math.min(coreSide + 2 * margin, Math.max(bands.keptRows, Math.floor(budget / 2 / source.rowBytes))) : bands.keptRows);
  } else {
    coreSide = options.coreSide ?? coreSideFor(budget, margin, networkScale);
  }
  return { width, height, survey, diameter, coreSide, margin, grid: blockGrid(width, height, coreSide, margin) };
}

/** The parameters every block runs with: the request's, with the survey's diameter and modality fixed. */
function blockParams(plan: Pick<BlockPlan, "survey">, params: Partial<SegmentParams>): Partial<SegmentParams> {
  const { survey } = plan;
  return { ...params, diameter: survey.diameter, ...(survey.modality && { modality: survey.modality.modality }) };
}

interface BlockCells {
  /** The cells whose centroid lies in the block's core, in image coordinates, unnumbered and in no particular order. */
  cells: Roi[];
  /** Sum of their areas. */
  keptArea: number;
  /** The block had no signal: neither the network nor the masks ran (glass.ts). */
  glass: boolean;
  timings: Partial<BlockwiseResult["timings"]>;
}

interface BlockOptions {
  onRead?: BlockwiseOptions["onRead"];
  measureIntensity?: boolean;
  cellExpansion?: BlockwiseOptions["cellExpansion"];
  signal?: AbortSignal;
}

/**
 * One block: read its rectangle, skip it if it is glass, else segment it as a whole image with the
 * plan's normalisation and keep the cells whose centroid lies in its core. What a block task of a
 * fanned-out prediction runs, and each step of segmentInBlocks.
 */
export async function segmentBlock(
  source: RegionSource,
  block: Block,
  plan: Pick<BlockPlan, "survey" | "diameter">,
  model: LoadedModel,
  params: Partial<SegmentParams>,
  options: BlockOptions = {},
): Promise<BlockCells> {
  const { read, core } = block;
  const timings: BlockCells["timings"] = {};
  let started = performance.now();
  const region = await source.readRegion(read.x, read.y, read.width, read.height);
  timings.read = performance.now() - started;
  options.onRead?.(region, block);
  const runParams = blockParams(plan, params);
  if (blockIsGlass(region, model.manifest, runParams.channels, runParams.modality ?? "auto", plan.survey.normalization, plan.diameter)) {
    return { cells: [], keptArea: 0, glass: true, timings };
  }
  const result = await segmentImage(region, model, runParams, { normalization: plan.survey.normalization, signal: options.signal });
  Object.assign(timings, result.timings);
  started = performance.now();
  const intensities = options.measureIntensity ? measureIntensity(region, result.labels, result.rois.length) : undefined;
  timings.intensity = performance.now() - started;
  const expansion = options.cellExpansion;
  if (expansion) {
    started = performance.now();
    attachCells(result.rois, region, result.labels, expansion.distance, expansion.sx, expansion.sy);
    timings.cells = performance.now() - started;
  }
  const cells: Roi[] = [];
  let keptArea = 0;
  for (const roi of result.rois) {
    if (!contains(core, roi.centroid_x + read.x, roi.centroid_y + read.y)) continue;
    keptArea += roi.area_px;
    if (intensities) roi.intensity = intensities[roi.index];
    cells.push(inImage(roi, read.x, read.y));
  }
  return { cells, keptArea, glass: false, timings };
}

export async function segmentInBlocks(
  source: RegionSource,
  model: LoadedModel,
  params: Partial<SegmentParams>,
  options: BlockwiseOptions,
): Promise<BlockwiseResult> {
  const report = (fraction: number, stage: string) => options.onProgress?.(Math.min(1, Math.max(0, fraction)), stage);
  const timings: BlockwiseResult["timings"] = {
    read: 0,
    survey: 0,
    normalize: 0,
    diameter: 0,
    rescale: 0,
    network: 0,
    masks: 0,
    rois: 0,
    intensity: 0,
    cells: 0,
  };
  report(0, "survey");
  const started = performance.now();
  const plan = await planBlocks(source, model, params, options);
  timings.survey = performance.now() - started;
  const { grid } = plan;
  const merge = new BlockMerge(grid);
  let keptArea = 0;
  let glass = 0;
  report(0.05, "blocks");

  for (const [index, block] of grid.blocks.entries()) {
    const kept = await segmentBlock(source, block, plan, model, params, options);
    for (const [stage, ms] of Object.entries(kept.timings)) timings[stage as keyof typeof timings] += ms;
    keptArea += kept.keptArea;
    if (kept.glass) glass++;
    const released = merge.add(index, kept.cells);
    if (released.length > 0) await options.onCells(released);
    options.onBlock?.(block, index, grid.blocks.length);
    report(0.05 + (0.95 * (index + 1)) / grid.blocks.length, "blocks");
  }

  const { survey } = plan;
  return {
    width: plan.width,
    height: plan.height,
    cellCount: merge.released,
    confluency: confluencyOf(keptArea, plan.width, plan.height),
    diameter: plan.diameter,
    ...(survey.diameterEstimate && { diameterEstimate: survey.diameterEstimate }),
    diameterBasis: survey.diameterBasis,
    ...(survey.modality && { modality: survey.modality }),
    blocks: grid.blocks.length,
    glassBlocks: glass,
    coreSide: plan.coreSide,
    margin: plan.margin,
    ...(survey.display && { display: survey.display }),
    timings,
  };
}

/** Cells kept by neighbouring blocks may overlap by a few pixels at a seam. */
export function confluencyOf(keptArea: number, width: number, height: number): number {
  return Math.min(1, keptArea / (width * height));
}

/**
 * Puts the blocks' kept cells in raster order: blocks are added in grid order, and after the last
 * block of a block row the cells that start above the next row's reads leave, numbered (no later
 * block can hold a cell that starts above them). The one merge of the in-process loop and of a
 * fanned-out prediction's parts, so both give the same artifact.
 */
export class BlockMerge {
  private readonly grid: BlockGrid;
  private readonly queue: RasterOrderQueue;
  private nextIndex = 0;

  constructor(grid: BlockGrid) {
    this.grid = grid;
    this.queue = new RasterOrderQueue(grid.blocks.reduce((right, b) => Math.max(right, b.core.x + b.core.width), 0));
  }

  /** Block `index`'s cells (the next block in grid order); returns the cells that may leave now. */
  add(index: number, cells: Roi[]): Roi[] {
    if (index !== this.nextIndex) throw new Error(`blocks must be merged in grid order: got block ${index}, expected ${this.nextIndex}`);
    this.nextIndex++;
    for (const cell of cells) this.queue.add(cell);
    const block = this.grid.blocks[index]!;
    if (block.column !== this.grid.columns - 1) return [];
    const nextRow = this.grid.blocks[index + 1];
    return nextRow ? this.queue.releaseAbove(nextRow.read.y) : this.queue.releaseAll();
  }

  get released(): number {
    return this.queue.released;
  }
}

/** A block's nucleus, and its cell if it has one, moved to image coordinates. */
function inImage(roi: Roi, dx: number, dy: number): Roi {
  const moved = shifted(roi, dx, dy);
  return roi.cell ? { ...moved, cell: shifted(roi.cell, dx, dy) } : moved;
}

/** An outline and its position by (dx, dy); the polygon is moved in place. */
function shifted<T extends Roi | RoiCell>(shape: T, dx: number, dy: number): T {
  const polygon = shape.polygon;
  for (let i = 0; i < polygon.length; i += 2) {
    polygon[i]! += dx;
    polygon[i + 1]! += dy;
  }
  return {
    ...shape,
    centroid_x: shape.centroid_x + dx,
    centroid_y: shape.centroid_y + dy,
    bbox_x: shape.bbox_x + dx,
    bbox_y: shape.bbox_y + dy,
    polygon,
  };
}
