// @ts-check
// The segmentation page's "Plots" card: a histogram of any numeric measurement column, or a
// scatter of two, of the segmentation's cells; dragging across it chooses a range (a rectangle on
// the scatter), whose cells the viewer then highlights on the image.
//
// The values come from /dashboard/api/segmentation/{id}/values (worker/services/cell-values.ts):
// Float64 cell after cell, every cell up to 200,000 and an even sample of that many above, which
// the card says. The viewer decides which drawn outline is in the range from the outline tile's own
// values (every column), so it highlights every cell in view, sampled or not.
import { api, byId } from "./dashboard.js";
import { contextFor, domainOf, drawAxes, drawBars, drawDensity, drawSelection, extent, formatValue, frameOf, histogram } from "./plot-drawing.js";

export { HIGHLIGHT } from "./plot-drawing.js";

/** @typedef {import("./plot-drawing.js").Frame} Frame */
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

/** A drag shorter than this many pixels is a click, and chooses nothing. */
const LEAST_DRAG = 3;

/**
 * Sets the card up; `setHighlight(test)` gives the viewer a test of a cell's measurements
 * (its outline tile's properties) for the chosen range, or null when nothing is chosen.
 * @param {{ segmentationId: string, setHighlight: (test: CellTest | null) => void }} viewer
 */
export function setUpPlots({ segmentationId, setHighlight }) {
  if (!document.getElementById("plots")) return;
  const card = byId("plots");
  const xSelect = byId("plot-x", HTMLSelectElement);
  const ySelect = byId("plot-y", HTMLSelectElement);
  const canvas = byId("plot-canvas", HTMLCanvasElement);
  const [note, chosen, clear] = ["plot-note", "plot-selection", "plot-clear"].map((id) => byId(id));

  /** @type {Column[]} */
  let columns = [];
  /** @type {PlotData | null} */
  let data = null;
  /** @type {Frame | null} */
  let frame = null;
  /** The plot without a selection, put back before each selection is drawn over it. @type {ImageData | null} */
  let base = null;
  /** The chosen ranges in the columns' units, or null. @type {Selection | null} */
  let selection = null;
  /** @type {{ x: number, y: number, moved: boolean } | null} */
  let drag = null;
  let request = 0;

  /** @param {Column} column */
  function option(column) {
    const element = document.createElement("option");
    element.value = column.name;
    element.textContent = column.name;
    element.title = column.description;
    return element;
  }

  /**
   * The columns in <optgroup>s by measurement group, as the exports group them.
   * @param {HTMLSelectElement} select
   * @param {string} chosenName
   */
  function fill(select, chosenName) {
    /** @type {Map<string, HTMLOptGroupElement>} */
    const groups = new Map();
    for (const column of columns) {
      if (!groups.has(column.group)) {
        const group = document.createElement("optgroup");
        group.label = column.group;
        groups.set(column.group, group);
      }
      groups.get(column.group)?.append(option(column));
    }
    select.append(...groups.values());
    select.value = chosenName;
  }

  async function loadValues() {
    const xName = xSelect.value;
    const yName = ySelect.value || null;
    const asked = ++request;
    setSelection(null);
    card.dataset.plot = "loading";
    note.textContent = "Loading values…";
    const query = new URLSearchParams({ x: xName, ...(yName && { y: yName }) });
    const response = await fetch(`/dashboard/api/segmentation/${segmentationId}/values?${query}`, { credentials: "same-origin" });
    if (!response.ok) throw new Error((await response.json().catch(() => null))?.detail ?? `values answered ${response.status}`);
    const bytes = new DataView(await response.arrayBuffer());
    if (asked !== request) return; // another column was chosen meanwhile
    const stride = yName ? 2 : 1;
    const cells = bytes.byteLength / (8 * stride);
    const x = new Float64Array(cells);
    const y = yName ? new Float64Array(cells) : null;
    for (let i = 0; i < cells; i++) {
      x[i] = bytes.getFloat64(i * 8 * stride, true);
      if (y) y[i] = bytes.getFloat64(i * 8 * stride + 8, true);
    }
    data = { x, y, xName, yName, cellCount: Number(response.headers.get("X-Cell-Count")), returned: cells };
    draw();
  }

  /**
   * Why a column has no values, in the words a person needs.
   * @param {string} name
   */
  function noValues(name) {
    const group = columns.find((c) => c.name === name)?.group;
    if (group === "calibrated") return `No values of ${name}: the image's pixel size is unknown.`;
    if (group === "cell") return `No values of ${name}: the prediction grew no cells around the nuclei.`;
    return `No values of ${name} for these cells.`;
  }

  /**
   * What the plot shows: all cells or a sample, and how many of them have a value.
   * @param {PlotData} data
   * @param {number} plotted
   */
  function describe(data, plotted) {
    const of =
      data.returned < data.cellCount ? `an even sample of ${count(data.returned)} of the ${count(data.cellCount)} cells` : `${count(data.cellCount)} cells`;
    const missing = data.returned - plotted;
    return `Showing ${of}${missing > 0 ? `; ${count(missing)} without a value are left out` : ""}.`;
  }

  function draw() {
    base = null;
    frame = null;
    const ctx = contextFor(canvas);
    if (!data) return;
    const { x, y, xName, yName } = data;
    const xRange = extent(x);
    if (xRange.finite === 0 || (y && extent(y).finite === 0)) {
      card.dataset.plot = "empty";
      note.textContent = noValues(xRange.finite === 0 || !yName ? xName : yName);
      return;
    }
    if (y) {
      frame = frameOf(canvas, domainOf(xRange), domainOf(extent(y)));
      drawAxes(ctx, frame, xName, yName ?? "");
      drawDensity(ctx, frame, x, y);
      let plotted = 0;
      for (let i = 0; i < x.length; i++) if (Number.isFinite(x[i]) && Number.isFinite(y[i])) plotted++;
      note.textContent = describe(data, plotted);
      card.dataset.plot = "scatter";
    } else {
      const bins = histogram(x);
      if (!bins) return; // no finite value: told above
      frame = frameOf(canvas, [bins.lo, bins.hi], [0, Math.max(...bins.counts) * 1.05]);
      drawAxes(ctx, frame, xName, "cells", { x: bins.integers, y: true });
      drawBars(ctx, frame, bins);
      note.textContent = describe(data, bins.finite);
      card.dataset.plot = "histogram";
    }
    base = ctx.getImageData(0, 0, canvas.width, canvas.height);
    if (selection) drawSelection(ctx, frame, selection);
  }

  /**
   * The plotted cells in the selection (of the sample, when it is one).
   * @param {PlotData} data
   * @param {Selection} selection
   */
  function selectedCount(data, selection) {
    const { x, y } = data;
    const [ylo, yhi] = selection.y ?? [-Infinity, Infinity];
    const [xlo, xhi] = selection.x;
    let n = 0;
    for (let i = 0; i < x.length; i++) {
      if (!(x[i] >= xlo && x[i] <= xhi)) continue; // NaN is in no range
      if (y && !(y[i] >= ylo && y[i] <= yhi)) continue;
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
  function cellTest(data, selection) {
    const { xName, yName } = data;
    const [xlo, xhi] = selection.x;
    const [ylo, yhi] = selection.y ?? [-Infinity, Infinity];
    /** @type {(v: unknown, lo: number, hi: number) => boolean} */
    const within = (v, lo, hi) => typeof v === "number" && v >= lo && v <= hi;
    return yName ? (props) => within(props[xName], xlo, xhi) && within(props[yName], ylo, yhi) : (props) => within(props[xName], xlo, xhi);
  }

  function showSelection() {
    clear.hidden = !selection;
    if (!selection || !data) {
      chosen.textContent = data?.y ? "Drag a rectangle on the scatter to choose cells." : "Drag across the histogram to choose a range.";
      delete card.dataset.selectedCount;
      delete card.dataset.selectionX;
      delete card.dataset.selectionY;
      return;
    }
    const n = selectedCount(data, selection);
    /** @type {(name: string, range: Range) => string} */
    const range = (name, [lo, hi]) => `${name} ${formatValue(lo)} – ${formatValue(hi)}`;
    const ranges = [range(data.xName, selection.x), ...(selection.y && data.yName ? [range(data.yName, selection.y)] : [])].join(", ");
    const cells = data.returned < data.cellCount ? `${count(n)} of the ${count(data.returned)} sampled cells` : `${count(n)} of ${count(data.cellCount)} cells`;
    chosen.textContent = `${ranges}: ${cells}`;
    // The exact bounds and count, for the browser tests (the text rounds them).
    card.dataset.selectedCount = String(n);
    card.dataset.selectionX = selection.x.join(",");
    if (selection.y) card.dataset.selectionY = selection.y.join(",");
    else delete card.dataset.selectionY;
  }

  /**
   * Shows `next` (or none) on the plot and in the text; `final` hands it to the viewer too.
   * @param {Selection | null} next
   */
  function setSelection(next, final = true) {
    selection = next;
    const ctx = canvas.getContext("2d");
    if (base && frame && ctx) {
      ctx.putImageData(base, 0, 0);
      if (selection) drawSelection(ctx, frame, selection);
    }
    showSelection();
    if (final) setHighlight(selection && data ? cellTest(data, selection) : null);
  }

  /** @param {PointerEvent} e */
  function pointerOf(e) {
    const rect = canvas.getBoundingClientRect();
    return [e.clientX - rect.left, e.clientY - rect.top];
  }

  /**
   * The ranges between where the drag began and the pointer: on x alone for a histogram.
   * @param {PointerEvent} e
   * @param {{ x: number, y: number }} start
   * @param {Frame} frame
   * @returns {Selection}
   */
  function dragged(e, start, frame) {
    const [px, py] = pointerOf(e);
    /** @type {(a: number, b: number) => Range} */
    const ordered = (a, b) => (a <= b ? [a, b] : [b, a]);
    const x = ordered(frame.fromX(start.x), frame.fromX(px));
    if (!data?.y) return { x };
    return { x, y: ordered(frame.fromY(start.y), frame.fromY(py)) };
  }

  canvas.addEventListener("pointerdown", (e) => {
    const [px, py] = pointerOf(e);
    if (!frame?.contains(px, py)) return;
    drag = { x: px, y: py, moved: false };
    canvas.setPointerCapture(e.pointerId);
  });
  canvas.addEventListener("pointermove", (e) => {
    if (!drag) return;
    const [px, py] = pointerOf(e);
    drag.moved ||= Math.hypot(px - drag.x, py - drag.y) >= LEAST_DRAG;
    if (drag.moved && frame) setSelection(dragged(e, drag, frame), false);
  });
  canvas.addEventListener("pointerup", (e) => {
    if (!drag) return;
    const start = drag;
    drag = null;
    if (start.moved && frame) setSelection(dragged(e, start, frame));
  });
  clear.addEventListener("click", () => setSelection(null));

  /** @param {() => Promise<void>} load */
  const show = (load) =>
    load().catch((/** @type {Error} */ error) => {
      card.dataset.plot = "failed";
      note.textContent = `Could not load the values: ${error.message}`;
    });
  xSelect.addEventListener("change", () => show(loadValues));
  ySelect.addEventListener("change", () => show(loadValues));
  new ResizeObserver(() => {
    if (data) draw();
  }).observe(canvas);

  // Values are asked for once the card is in sight: for a whole slide they are a read through all
  // its stored cells, which a visit that never scrolls to the plots should not cost.
  const inSight = new IntersectionObserver((entries) => {
    if (!entries.some((e) => e.isIntersecting)) return;
    inSight.disconnect();
    show(async () => {
      ({ columns } = await api(`/segmentation/${segmentationId}/columns`));
      if (columns.length === 0) throw new Error("the segmentation has no numeric columns");
      fill(xSelect, columns.some((c) => c.name === "area_px") ? "area_px" : columns[0].name);
      fill(ySelect, "");
      await loadValues();
    });
  });
  inSight.observe(card);
}
