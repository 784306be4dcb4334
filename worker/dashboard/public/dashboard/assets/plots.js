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
import { contextFor, domainOf, drawAxes, drawBars, drawDensity, drawSelection, extent, frameOf, histogram } from "./plot-drawing.js";
import { cellTest, decodeValues, noValuesText, pairedCount, plotNote, selectedCount, selectionText } from "./plot-values.js";

export { HIGHLIGHT } from "./plot-drawing.js";

/** @typedef {import("./plot-drawing.js").Frame} Frame */
/** @typedef {import("./plot-drawing.js").Selection} Selection */
/** @typedef {import("./plot-drawing.js").Range} Range */
/** @typedef {import("./plot-values.js").Column} Column */
/** @typedef {import("./plot-values.js").CellTest} CellTest */
/** @typedef {import("./plot-values.js").PlotData} PlotData */

/** A drag shorter than this many pixels is a click, and chooses nothing. */
const LEAST_DRAG = 3;

/**
 * Sets the card up; `setHighlight(test)` gives the viewer a test of a cell's measurements
 * (its outline tile's properties) for the chosen range, or null when nothing is chosen.
 * @param {{ segmentationId: string, setHighlight: (test: CellTest | null) => void }} viewer
 */
export function setUpPlots({ segmentationId, setHighlight }) {
  if (!document.getElementById("plots")) return;
  const card = new PlotsCard(segmentationId, setHighlight);
  card.listen();
  // Values are asked for once the card is in sight: for a whole slide they are a read through all
  // its stored cells, which a visit that never scrolls to the plots should not cost.
  const inSight = new IntersectionObserver((entries) => {
    if (!entries.some((e) => e.isIntersecting)) return;
    inSight.disconnect();
    card.show(() => card.start());
  });
  inSight.observe(byId("plots"));
}

class PlotsCard {
  card = byId("plots");
  xSelect = byId("plot-x", HTMLSelectElement);
  ySelect = byId("plot-y", HTMLSelectElement);
  canvas = byId("plot-canvas", HTMLCanvasElement);
  note = byId("plot-note");
  chosen = byId("plot-selection");
  clear = byId("plot-clear");

  /** @type {Column[]} */
  columns = [];
  /** @type {PlotData | null} */
  data = null;
  /** @type {Frame | null} */
  frame = null;
  /** The plot without a selection, put back before each selection is drawn over it. @type {ImageData | null} */
  base = null;
  /** The chosen ranges in the columns' units, or null. @type {Selection | null} */
  selection = null;
  /** @type {{ x: number, y: number, moved: boolean } | null} */
  drag = null;
  /** Counts the values asked for, so that only the latest answer is drawn. */
  request = 0;

  /**
   * @param {string} segmentationId
   * @param {(test: CellTest | null) => void} setHighlight
   */
  constructor(segmentationId, setHighlight) {
    this.segmentationId = segmentationId;
    this.setHighlight = setHighlight;
  }

  /** The columns, then the plot of area_px (or the first column) alone. */
  async start() {
    ({ columns: this.columns } = await api(`/segmentation/${this.segmentationId}/columns`));
    const [first] = this.columns;
    if (!first) throw new Error("the segmentation has no numeric columns");
    this.#fill(this.xSelect, this.columns.some((c) => c.name === "area_px") ? "area_px" : first.name);
    this.#fill(this.ySelect, "");
    await this.#loadValues();
  }

  /**
   * Runs a load, and says on the card when it fails.
   * @param {() => Promise<void>} load
   */
  show(load) {
    load().catch((/** @type {Error} */ error) => {
      this.card.dataset.plot = "failed";
      this.note.textContent = `Could not load the values: ${error.message}`;
    });
  }

  listen() {
    const { canvas } = this;
    canvas.addEventListener("pointerdown", (e) => {
      const [px, py] = this.#pointerOf(e);
      if (!this.frame?.contains(px, py)) return;
      this.drag = { x: px, y: py, moved: false };
      canvas.setPointerCapture(e.pointerId);
    });
    canvas.addEventListener("pointermove", (e) => {
      const drag = this.drag;
      if (!drag) return;
      const [px, py] = this.#pointerOf(e);
      drag.moved ||= Math.hypot(px - drag.x, py - drag.y) >= LEAST_DRAG;
      if (drag.moved && this.frame) this.#setSelection(this.#dragged(e, drag, this.frame), false);
    });
    canvas.addEventListener("pointerup", (e) => {
      const start = this.drag;
      if (!start) return;
      this.drag = null;
      if (start.moved && this.frame) this.#setSelection(this.#dragged(e, start, this.frame));
    });
    this.clear.addEventListener("click", () => this.#setSelection(null));
    this.xSelect.addEventListener("change", () => this.show(() => this.#loadValues()));
    this.ySelect.addEventListener("change", () => this.show(() => this.#loadValues()));
    new ResizeObserver(() => {
      if (this.data) this.#draw();
    }).observe(canvas);
  }

  /**
   * The columns in <optgroup>s by measurement group, as the exports group them.
   * @param {HTMLSelectElement} select
   * @param {string} chosenName
   */
  #fill(select, chosenName) {
    /** @type {Map<string, HTMLOptGroupElement>} */
    const groups = new Map();
    for (const column of this.columns) {
      let group = groups.get(column.group);
      if (!group) {
        group = document.createElement("optgroup");
        group.label = column.group;
        groups.set(column.group, group);
      }
      const option = document.createElement("option");
      option.value = column.name;
      option.textContent = column.name;
      option.title = column.description;
      group.append(option);
    }
    select.append(...groups.values());
    select.value = chosenName;
  }

  async #loadValues() {
    const xName = this.xSelect.value;
    const yName = this.ySelect.value || null;
    const asked = ++this.request;
    this.#setSelection(null);
    this.card.dataset.plot = "loading";
    this.note.textContent = "Loading values…";
    const query = new URLSearchParams({ x: xName, ...(yName && { y: yName }) });
    const response = await fetch(`/dashboard/api/segmentation/${this.segmentationId}/values?${query}`, { credentials: "same-origin" });
    if (!response.ok) throw new Error((await response.json().catch(() => null))?.detail ?? `values answered ${response.status}`);
    const buffer = await response.arrayBuffer();
    if (asked !== this.request) return; // another column was chosen meanwhile
    const { x, y } = decodeValues(buffer, yName !== null);
    this.data = { x, y, xName, yName, cellCount: Number(response.headers.get("X-Cell-Count")), returned: x.length };
    this.#draw();
  }

  #draw() {
    this.base = null;
    this.frame = null;
    const { canvas, card, note, data } = this;
    const ctx = contextFor(canvas);
    if (!data) return;
    const { x, y, xName, yName } = data;
    const xRange = extent(x);
    if (xRange.finite === 0 || (y && extent(y).finite === 0)) {
      card.dataset.plot = "empty";
      note.textContent = noValuesText(this.columns, xRange.finite === 0 || !yName ? xName : yName);
      return;
    }
    if (y) {
      this.frame = frameOf(canvas, domainOf(xRange), domainOf(extent(y)));
      drawAxes(ctx, this.frame, xName, yName ?? "");
      drawDensity(ctx, this.frame, x, y);
      note.textContent = plotNote(data, pairedCount(x, y));
      card.dataset.plot = "scatter";
    } else {
      const bins = histogram(x);
      if (!bins) return; // no finite value: told above
      this.frame = frameOf(canvas, [bins.lo, bins.hi], [0, Math.max(...bins.counts) * 1.05]);
      drawAxes(ctx, this.frame, xName, "cells", { x: bins.integers, y: true });
      drawBars(ctx, this.frame, bins);
      note.textContent = plotNote(data, bins.finite);
      card.dataset.plot = "histogram";
    }
    this.base = ctx.getImageData(0, 0, canvas.width, canvas.height);
    if (this.selection) drawSelection(ctx, this.frame, this.selection);
  }

  #showSelection() {
    const { card, chosen, selection, data } = this;
    this.clear.hidden = !selection;
    if (!selection || !data) {
      chosen.textContent = data?.y ? "Drag a rectangle on the scatter to choose cells." : "Drag across the histogram to choose a range.";
      delete card.dataset.selectedCount;
      delete card.dataset.selectionX;
      delete card.dataset.selectionY;
      return;
    }
    const n = selectedCount(data, selection);
    chosen.textContent = selectionText(data, selection, n);
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
  #setSelection(next, final = true) {
    this.selection = next;
    const ctx = this.canvas.getContext("2d");
    if (this.base && this.frame && ctx) {
      ctx.putImageData(this.base, 0, 0);
      if (next) drawSelection(ctx, this.frame, next);
    }
    this.#showSelection();
    if (final) this.setHighlight(next && this.data ? cellTest(this.data, next) : null);
  }

  /**
   * @param {PointerEvent} e
   * @returns {[number, number]} the pointer in the canvas' CSS pixels
   */
  #pointerOf(e) {
    const rect = this.canvas.getBoundingClientRect();
    return [e.clientX - rect.left, e.clientY - rect.top];
  }

  /**
   * The ranges between where the drag began and the pointer: on x alone for a histogram.
   * @param {PointerEvent} e
   * @param {{ x: number, y: number }} start
   * @param {Frame} frame
   * @returns {Selection}
   */
  #dragged(e, start, frame) {
    const [px, py] = this.#pointerOf(e);
    /** @type {(a: number, b: number) => Range} */
    const ordered = (a, b) => (a <= b ? [a, b] : [b, a]);
    const x = ordered(frame.fromX(start.x), frame.fromX(px));
    if (!this.data?.y) return { x };
    return { x, y: ordered(frame.fromY(start.y), frame.fromY(py)) };
  }
}
