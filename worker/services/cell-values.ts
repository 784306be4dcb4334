// The values of one or two measurement columns for every cell of a segmentation, for the
// dashboard's plots (a histogram of one column, a scatter of two). They are computed as
// measurements.csv computes them (the same columns of schema/measurements.ts) while the ROI artifact
// streams past, one chunk at a time, and leave as little-endian Float64 values, cell after cell
// (x, or x then y), NaN where the CSV has an empty field: 16 bytes a cell where the CSV's text
// would be some 40.
//
// A whole slide has half a million cells; a plot needs no more than MAX_PLOTTED_CELLS to show their
// distribution. Above that the answer is a deterministic sample spread evenly over the cells
// (raster order, so over the image too), and its headers say how many cells there are in all: the
// answer and the measuring stay bounded, while the artifact is read through once, as an export's.

import { type ExportContext, formatMeasurement } from "../../schema/measurements.ts";
import { type MeasurementColumn, measurementColumns, RoiDerived } from "../../common/measurement-columns.ts";
import type { RoiArtifactContents } from "../../schema/roi-artifact.ts";
import type { Bindings } from "../env.ts";
import { HttpError } from "../errors.ts";
import { exportContext, withHeader } from "../exports/index.ts";
import { pullStream } from "../exports/pull-stream.ts";
import { openRoiArtifact } from "./stored-rois.ts";
import type { Segmentation } from "./segmentations.ts";

/** The most cells one answer carries: 3.2 MB of two columns. */
export const MAX_PLOTTED_CELLS = 200_000;
/** Cells per streamed block of values. */
const BLOCK_CELLS = 8192;

/** What a plot can show: the numeric columns that differ from cell to cell (not the segmentation's own, such as confluency). */
function plottableColumns(columns: readonly MeasurementColumn[]): MeasurementColumn[] {
  return columns.filter((c) => c.type === "number" && c.source === "roi");
}

interface PlotColumns {
  cell_count: number;
  max_cells: number;
  columns: { name: string; group: string; description: string }[];
}

interface CellValues {
  /** The segmentation's cells. */
  cellCount: number;
  /** The cells whose values the body carries: all of them, or the sample. */
  returned: number;
  columns: string[];
  body: ReadableStream<Uint8Array>;
}

/** The segmentation's columns with their header's (intensities of its channels, its cells'), and the artifact to read on. */
async function contentsWithColumns(env: Bindings, segmentation: Segmentation) {
  const contents = await openRoiArtifact(env, segmentation);
  const context = withHeader(exportContext(segmentation), contents.header);
  return { contents, context, columns: plottableColumns(measurementColumns(context)) };
}

/** The columns a plot of this segmentation offers: only its artifact's header is read. */
export async function plotColumns(env: Bindings, segmentation: Segmentation): Promise<PlotColumns> {
  const { contents, columns } = await contentsWithColumns(env, segmentation);
  await contents.cancel();
  return {
    cell_count: contents.header.roiCount,
    max_cells: MAX_PLOTTED_CELLS,
    columns: columns.map((c) => ({ name: c.name, group: c.group, description: c.description })),
  };
}

/**
 * The values of `names` (one or two columns) for every cell, or for `maxCells` of them spread
 * evenly when there are more: cell floor(j · cells / maxCells) for j = 0, 1, ... An unknown or
 * non-numeric column is a 400 naming the columns there are, before any cell is read.
 */
export async function cellValues(env: Bindings, segmentation: Segmentation, names: readonly string[], maxCells: number): Promise<CellValues> {
  const { contents, context, columns } = await contentsWithColumns(env, segmentation);
  const chosen = names.map((name) => columns.find((c) => c.name === name));
  const unknown = names.filter((_, i) => !chosen[i]);
  if (unknown.length > 0) {
    await contents.cancel();
    throw new HttpError(
      400,
      `Not a numeric column of segmentation ${segmentation.id}: ${unknown.join(", ")}; its numeric columns are ${columns.map((c) => c.name).join(", ")}`,
    );
  }
  const cellCount = contents.header.roiCount;
  const returned = Math.min(cellCount, maxCells);
  return { cellCount, returned, columns: [...names], body: pullStream(valueBlocks(contents, context, chosen as MeasurementColumn[], returned)) };
}

async function* valueBlocks(contents: RoiArtifactContents, context: ExportContext, columns: readonly MeasurementColumn[], returned: number) {
  const cellCount = contents.header.roiCount;
  const blockBytes = BLOCK_CELLS * columns.length * 8;
  let block = new DataView(new ArrayBuffer(blockBytes));
  let at = 0;
  let taken = 0;
  let next = 0; // the index of the next cell the sample takes
  // Read to the end even once the sample is complete: the reader checks the artifact's totals there.
  for await (const roi of contents.rois) {
    if (roi.index !== next) continue;
    const derived = new RoiDerived(roi);
    for (const column of columns) {
      const value = column.value(context, roi, derived);
      // The CSV writes a missing or non-finite value as an empty field: NaN here; a number as the
      // exports round it, so a plotted cell shows the CSV's own value.
      const written = typeof value === "number" ? formatMeasurement(value) : null;
      block.setFloat64(at, written === null ? Number.NaN : Number(written), true);
      at += 8;
    }
    taken++;
    next = taken < returned ? Math.floor((taken * cellCount) / returned) : cellCount;
    if (at === blockBytes) {
      yield new Uint8Array(block.buffer);
      block = new DataView(new ArrayBuffer(blockBytes));
      at = 0;
    }
  }
  yield new Uint8Array(block.buffer, 0, at);
}
