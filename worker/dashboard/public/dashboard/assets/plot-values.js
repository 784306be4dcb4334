// @ts-check
// The plots card's data and what it says of them, without a DOM: the values as the worker sends
// them (worker/services/cell-values.ts), the cells a chosen range holds, and the card's sentences.
// plots.js shows them; test/worker/dashboard-plot-values.test.ts checks them.
import { formatValue } from "./plot-drawing.js";

/** @typedef {import("./plot-drawing.js").Selection} Selection */
/** @typedef {import("./plot-drawing.js").Range} Range */
/** A measurement column as /segmentation/{id}/columns lists it. */
/** @typedef {{ name: string, group: string, description: string }} Column */
/** A cell's measurements as its outline tile gives them: numbers, or null for no value. */
/** @typedef {Record<string, unknown>} CellProps */
/** @typedef {(props: CellProps) => boolean} CellTest */
/**
 * The values shown: y is null for a histogram; `returned` of the segmentation's `cellCount`
 * cells (an even sample above 200,000).
 * @typedef {{ x: Float64Array, y: Float64Array | null, xName: string, yName: string | null, cellCount: number, returned: number }} PlotData
 */

/** @param {number} n */
const count = (n) => n.toLocaleString("en-US");

/**
 * The values as the worker sends them: little-endian Float64, cell after cell, x then y for a pair.
 * @param {ArrayBuffer} buffer
 * @param {boolean} paired whether each cell has a y after its x
 */
export function decodeValues(buffer, paired) {
  const bytes = new DataView(buffer);
  const stride = paired ? 16 : 8;
  const cells = Math.floor(bytes.byteLength / stride);
  const x = new Float64Array(cells);
  const y = paired ? new Float64Array(cells) : null;
  for (let i = 0; i < cells; i++) {
    x[i] = bytes.getFloat64(i * stride, true);
    if (y) y[i] = bytes.getFloat64(i * stride + 8, true);
  }
  return { x, y };
}

/**
 * Why a column has no values, in the words a person needs.
 * @param {Column[]} columns
 * @param {string} name
 */
export function noValuesText(columns, name) {
  const group = columns.find((c) => c.name === name)?.group;
  if (group === "calibrated") return `No values of ${name}: the image's pixel size is unknown.`;
  if (group === "cell") return `No values of ${name}: the prediction grew no cells around the nuclei.`;
  return `No values of ${name} for these cells.`;
}

/**
 * What the plot shows: all cells or a sample, and how many of them have a value.
 * @param {PlotData} data
 * @param {number} plotted the cells with a finite value (both, on a scatter)
 */
export function plotNote(data, plotted) {
  const of =
    data.returned < data.cellCount ? `an even sample of ${count(data.returned)} of the ${count(data.cellCount)} cells` : `${count(data.cellCount)} cells`;
  const missing = data.returned - plotted;
  return `Showing ${of}${missing > 0 ? `; ${count(missing)} without a value are left out` : ""}.`;
}

/**
 * The cells of a scatter with both values finite.
 * @param {Float64Array} x
 * @param {Float64Array} y
 */
export function pairedCount(x, y) {
  let n = 0;
  for (let i = 0; i < x.length; i++) if (Number.isFinite(x[i]) && Number.isFinite(y[i])) n++;
  return n;
}

/**
 * The plotted cells in the selection (of the sample, when it is one).
 * @param {PlotData} data
 * @param {Selection} selection
 */
export function selectedCount(data, selection) {
  const { x, y } = data;
  const [ylo, yhi] = selection.y ?? [-Infinity, Infinity];
  const [xlo, xhi] = selection.x;
  let n = 0;
  for (let i = 0; i < x.length; i++) {
    const xi = /** @type {number} */ (x[i]);
    if (!(xi >= xlo && xi <= xhi)) continue; // NaN is in no range
    const yi = y ? /** @type {number} */ (y[i]) : 0;
    if (y && !(yi >= ylo && yi <= yhi)) continue;
    n++;
  }
  return n;
}

/**
 * A cell's test for the viewer, on its outline tile's properties (numbers, or null for no value).
 * @param {PlotData} data
 * @param {Selection} selection
 * @returns {CellTest}
 */
export function cellTest(data, selection) {
  const { xName, yName } = data;
  const [xlo, xhi] = selection.x;
  const [ylo, yhi] = selection.y ?? [-Infinity, Infinity];
  /** @type {(v: unknown, lo: number, hi: number) => boolean} */
  const within = (v, lo, hi) => typeof v === "number" && v >= lo && v <= hi;
  return yName ? (props) => within(props[xName], xlo, xhi) && within(props[yName], ylo, yhi) : (props) => within(props[xName], xlo, xhi);
}

/**
 * The selection in words: "area_px 40 – 80: 12 of 48 cells".
 * @param {PlotData} data
 * @param {Selection} selection
 * @param {number} selected its cells, from selectedCount
 */
export function selectionText(data, selection, selected) {
  /** @type {(name: string, range: Range) => string} */
  const range = (name, [lo, hi]) => `${name} ${formatValue(lo)} – ${formatValue(hi)}`;
  const ranges = [range(data.xName, selection.x), ...(selection.y && data.yName ? [range(data.yName, selection.y)] : [])].join(", ");
  const cells =
    data.returned < data.cellCount ? `${count(selected)} of the ${count(data.returned)} sampled cells` : `${count(selected)} of ${count(data.cellCount)} cells`;
  return `${ranges}: ${cells}`;
}
