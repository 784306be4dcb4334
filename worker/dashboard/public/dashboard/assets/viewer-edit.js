// @ts-check
// Correcting a segmentation in the viewer: select a cell and delete it, draw a new one corner by
// corner, undo and redo, then save the result as a new segmentation of the image. Saving goes
// through the same import as the API's POST /segmentation (a GeoJSON of every kept and drawn
// cell), so the corrected segmentation has the import's record and exports, and a training learns
// from it. Unsaved corrections are kept in the browser (localStorage) until saved or discarded,
// and leaving the page with some asks first.
//
// The viewer (viewer.js) owns the view, the outline tiles and hit-testing; it hands this module
// what it needs in `viewer` and calls `click`, `doubleClick` and `drawOverlay`.
import { Corrections, makesACell, shoelace } from "./corrections.js";
import { api, byId } from "./dashboard.js";

/** @typedef {import("./viewer.js").Point} Point */
/** @typedef {import("./viewer.js").Cell} Cell */
/** @typedef {import("./viewer.js").RoiIndex} RoiIndex */
/**
 * What the viewer hands the editor.
 * @typedef {object} EditorHost
 * @property {HTMLElement} root the viewer's element, whose data-* attributes the browser tests read
 * @property {string} segmentationId
 * @property {string} imageId
 * @property {number} roiCount the segmentation's cells
 * @property {string | null} saveProblem why corrections cannot be saved, or null
 * @property {Set<RoiIndex>} hidden the stored cells deleted, which the editor keeps
 * @property {(roiIndex: RoiIndex) => void} redrawTileOf after a stored cell is deleted or brought back
 * @property {(x: number, y: number) => Cell | null} cellAt the stored cell at an image point
 * @property {(cell: Cell, x: number, y: number) => boolean} contains
 * @property {() => Cell[]} cells every stored cell loaded
 * @property {() => Promise<void>} loadAllOutlines
 * @property {(cell: Cell | null) => void} showCell
 * @property {() => void} scheduleDraw
 * @property {() => void} updateStatus
 */
/**
 * The editor as the viewer calls it.
 * @typedef {object} Editor
 * @property {boolean} active whether edit mode is on
 * @property {(x: number, y: number) => void} click
 * @property {() => void} doubleClick
 * @property {(x: number, y: number) => void} pointerAt
 * @property {(ctx: CanvasRenderingContext2D, scale: number, line: number) => number} drawOverlay
 */

/**
 * A drawn cell in the viewer's cell shape: ring (closed), path, bbox, props.
 * @param {Point[]} corners at least three
 * @param {number} number the how-manieth drawn, which names it ("new 3")
 * @returns {Cell}
 */
function drawnCell(corners, number) {
  const ring = [...corners, /** @type {Point} */ (corners[0])];
  const path = new Path2D();
  corners.forEach(([x, y], i) => (i === 0 ? path.moveTo(x, y) : path.lineTo(x, y)));
  path.closePath();
  const xs = corners.map((c) => c[0]);
  const ys = corners.map((c) => c[1]);
  return {
    ring,
    path,
    bbox: [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)],
    props: { roi_index: `new ${number}`, area_px: Math.round(Math.abs(shoelace(corners)) / 2) },
    drawn: true,
  };
}

/** @param {string} id */
const $ = (id) => byId(id);
/** @param {string} id */
const button = (id) => byId(id, HTMLButtonElement);

/**
 * @param {EditorHost} viewer
 * @returns {Editor | null} null on a page without the edit card
 */
export function setUpEditing(viewer) {
  if (!document.getElementById("edit-card") || !viewer.segmentationId) return null;
  const editor = new CellEditor(viewer);
  editor.restore();
  editor.listen();
  editor.refresh();
  return editor;
}

/** @implements {Editor} */
class CellEditor {
  #viewer;
  #storageKey;
  /** @type {Corrections<Cell>} */
  #corrections;
  #editing = false;
  /** Corners of the cell being drawn, in image pixels, or null. @type {Point[] | null} */
  #drawing = null;
  /** The pointer in image pixels, for the rubber band. @type {Point | null} */
  #pointer = null;
  /** @type {Cell | null} */
  #selected = null;
  /** Drawn cells so far, which names the next one ("new 3"). */
  #drawnCount = 0;

  /** @param {EditorHost} viewer */
  constructor(viewer) {
    this.#viewer = viewer;
    this.#storageKey = `cellseg-corrections-${viewer.segmentationId}`;
    this.#corrections = new Corrections(viewer.hidden, viewer.redrawTileOf);
  }

  get active() {
    return this.#editing;
  }

  /** Corrections left unsaved on this segmentation last time come back, and say so. */
  restore() {
    /** @type {{ deleted?: RoiIndex[], added?: Point[][] } | null} */
    const stored = JSON.parse(localStorage.getItem(this.#storageKey) ?? "null");
    if (!stored) return;
    this.#corrections.restore(
      stored.deleted ?? [],
      (stored.added ?? []).map((corners) => drawnCell(corners, ++this.#drawnCount)),
    );
    $("restored-note").hidden = false;
  }

  listen() {
    $("edit-toggle").addEventListener("click", () => this.#setEditing(!this.#editing));
    $("draw-cell").addEventListener("click", () => {
      this.#drawing = this.#drawing ? null : [];
      this.refresh();
    });
    $("delete-cell").addEventListener("click", () => this.#deleteSelected());
    $("undo").addEventListener("click", () => this.#undo());
    $("redo").addEventListener("click", () => this.#redo());
    $("save-corrections").addEventListener("click", () => this.#save());
    $("discard-corrections").addEventListener("click", () => this.#discard());
    if (this.#viewer.saveProblem) $("save-problem").textContent = this.#viewer.saveProblem;
    document.addEventListener("keydown", (e) => this.#key(e));
    window.addEventListener("beforeunload", (e) => {
      if (!this.#corrections.dirty) return;
      e.preventDefault();
      e.returnValue = ""; // the browser's own "Leave site?" question
    });
  }

  /** Shows the corrections in the card and on the image. */
  refresh() {
    const corrections = this.#corrections;
    const { root } = this.#viewer;
    $("edit-summary").textContent = corrections.summary();
    button("undo").disabled = !corrections.canUndo;
    button("redo").disabled = !corrections.canRedo;
    button("delete-cell").disabled = !this.#selected;
    $("draw-cell").classList.toggle("active", this.#drawing !== null);
    button("discard-corrections").disabled = !corrections.dirty;
    // The note kept from a last visit names the controls shown: "Edit cells" until editing.
    $("restored-note").textContent =
      `Unsaved corrections from your last visit are back: ${this.#editing ? "save or discard them below" : "choose Edit cells to save or discard them"}.`;
    button("save-corrections").disabled = !corrections.dirty || Boolean(this.#viewer.saveProblem);
    $("cell-count").textContent = corrections.cellCount(this.#viewer.roiCount).toLocaleString("en-US");
    root.dataset.corrections = String(corrections.deletedCount + corrections.drawn.length);
    root.dataset.drawing = String(this.#drawing !== null);
    this.#viewer.updateStatus();
    this.#viewer.scheduleDraw();
  }

  /**
   * A click (not a drag) on the image, at image pixel (x, y).
   * @param {number} x
   * @param {number} y
   */
  click(x, y) {
    if (!this.#editing) return;
    if (this.#drawing) {
      this.#drawing.push([Math.round(x), Math.round(y)]);
      this.refresh();
      return;
    }
    this.#select(this.#corrections.drawn.findLast((c) => this.#viewer.contains(c, x, y)) ?? this.#viewer.cellAt(x, y));
  }

  doubleClick() {
    const drawing = this.#drawing;
    if (!this.#editing || !drawing) return;
    // The double-click's two clicks added the same corner twice: keep one.
    const last = drawing.at(-1);
    const before = drawing.at(-2);
    if (last && before && last[0] === before[0] && last[1] === before[1]) drawing.pop();
    this.#finishDrawing();
  }

  /**
   * @param {number} x
   * @param {number} y
   */
  pointerAt(x, y) {
    this.#pointer = [x, y];
    if (this.#drawing?.length) this.#viewer.scheduleDraw();
  }

  /**
   * Drawn cells, the selection and the outline being drawn, over the image (the context is in
   * image pixels, `scale` screen pixels to one); `line` is the outlines' width in screen pixels.
   * @param {CanvasRenderingContext2D} ctx
   * @param {number} scale
   * @param {number} line
   * @returns {number} the drawn cells
   */
  drawOverlay(ctx, scale, line) {
    const drawn = this.#corrections.drawn;
    ctx.lineWidth = (line + 0.5) / scale;
    ctx.strokeStyle = "#22d3ee";
    ctx.fillStyle = "rgba(34, 211, 238, 0.2)";
    for (const cell of drawn) {
      ctx.fill(cell.path);
      ctx.stroke(cell.path);
    }
    if (this.#selected) drawSelected(ctx, this.#selected.path, scale, line);
    if (this.#drawing?.length) drawCorners(ctx, this.#drawing, this.#pointer, scale, line);
    return drawn.length;
  }

  /** @param {KeyboardEvent} e */
  #key(e) {
    if (!this.#editing || e.target instanceof HTMLInputElement) return;
    const key = e.key.toLowerCase();
    const command = e.ctrlKey || e.metaKey;
    if (command && key === "z") {
      e.preventDefault();
      if (e.shiftKey) this.#redo();
      else this.#undo();
    } else if (command && key === "y") {
      e.preventDefault();
      this.#redo();
    } else if (key === "backspace" && this.#drawing?.length) {
      e.preventDefault();
      this.#drawing.pop(); // takes back the last corner placed
      this.refresh();
    } else if (key === "delete" || key === "backspace") {
      e.preventDefault();
      this.#deleteSelected();
    } else if (key === "enter") this.#finishDrawing();
    else if (key === "escape") {
      this.#drawing = null;
      this.refresh();
    }
  }

  /**
   * After the corrections changed: a cell no longer shown is no longer selected, and what is
   * unsaved is kept in the browser.
   * @param {Cell | undefined} [touched] the cell a step added, deleted or brought back
   */
  #changed(touched) {
    if (touched && touched === this.#selected) this.#select(null);
    this.#persist();
    this.refresh();
  }

  #undo() {
    this.#changed(this.#corrections.undo()?.cell);
  }

  #redo() {
    this.#changed(this.#corrections.redo()?.cell);
  }

  #deleteSelected() {
    const cell = this.#selected;
    if (!cell) return;
    this.#select(null);
    this.#corrections.delete(cell);
    this.#changed();
  }

  #finishDrawing() {
    const corners = this.#drawing;
    if (!corners) return;
    this.#drawing = null;
    if (makesACell(corners)) {
      this.#corrections.add(drawnCell(corners, ++this.#drawnCount));
      this.#changed();
    } else this.refresh();
  }

  /** @param {Cell | null} cell */
  #select(cell) {
    this.#selected = cell;
    this.#viewer.showCell(cell);
    this.#viewer.root.dataset.selectedCell = cell ? String(cell.props.roi_index) : "";
    this.refresh();
  }

  /** @param {boolean} on */
  #setEditing(on) {
    this.#editing = on;
    this.#drawing = null;
    this.#select(null);
    $("edit-tools").hidden = !on;
    $("edit-toggle").textContent = on ? "Stop editing" : "Edit cells";
    this.#viewer.root.classList.toggle("editing", on);
    this.#viewer.root.dataset.editing = String(on);
    this.refresh();
  }

  #persist() {
    const corrections = this.#corrections;
    if (corrections.dirty) {
      const deleted = [...this.#viewer.hidden];
      const added = corrections.drawn.map((c) => c.ring.slice(0, -1));
      localStorage.setItem(this.#storageKey, JSON.stringify({ deleted, added }));
    } else localStorage.removeItem(this.#storageKey);
  }

  /** Every kept and drawn cell, as the GeoJSON import of POST /segmentation takes them. */
  async #featureCollection() {
    await this.#viewer.loadAllOutlines();
    /** @param {Cell} cell */
    const feature = (cell) => ({ type: "Feature", properties: {}, geometry: { type: "Polygon", coordinates: [cell.ring] } });
    const kept = this.#viewer.cells().filter((cell) => !this.#corrections.isDeleted(cell.props.roi_index));
    return { type: "FeatureCollection", features: [...kept, ...this.#corrections.drawn].map(feature) };
  }

  async #save() {
    const saveButton = button("save-corrections");
    saveButton.disabled = true;
    $("edit-summary").textContent = "Saving…";
    try {
      const geojson = await this.#featureCollection();
      const form = new FormData();
      form.append("image_id", this.#viewer.imageId);
      form.append("file", new Blob([JSON.stringify(geojson)], { type: "application/geo+json" }), "corrections.geojson");
      /** @type {{ segmentation_id: string }} */
      const result = await api("/segmentation", { method: "POST", body: form });
      localStorage.removeItem(this.#storageKey);
      this.#corrections.saved();
      window.location.href = `/dashboard/segmentations/${result.segmentation_id}`;
    } catch (error) {
      $("edit-summary").textContent = `Not saved: ${error instanceof Error ? error.message : String(error)}`;
      saveButton.disabled = false;
    }
  }

  #discard() {
    if (!window.confirm("Discard the unsaved corrections?")) return;
    this.#corrections.discard();
    this.#persist();
    $("restored-note").hidden = true;
    this.#select(null);
  }
}

/**
 * The selected cell in two tones, so it stands out on any stain: a white line inside a dark one
 * shows on black fluorescence, white bright field and pink or red H&E alike.
 * @param {CanvasRenderingContext2D} ctx
 * @param {Path2D} path
 * @param {number} scale
 * @param {number} line
 */
function drawSelected(ctx, path, scale, line) {
  ctx.fillStyle = "rgba(255, 255, 255, 0.25)";
  ctx.fill(path);
  ctx.strokeStyle = "rgba(2, 6, 23, 0.9)";
  ctx.lineWidth = (line + 4) / scale;
  ctx.stroke(path);
  ctx.strokeStyle = "#ffffff";
  ctx.lineWidth = (line + 0.5) / scale;
  ctx.stroke(path);
}

/**
 * The outline being drawn: its corners, and a rubber band from the last to the pointer.
 * @param {CanvasRenderingContext2D} ctx
 * @param {Point[]} corners
 * @param {Point | null} pointer
 * @param {number} scale
 * @param {number} line
 */
function drawCorners(ctx, corners, pointer, scale, line) {
  ctx.strokeStyle = "#22d3ee";
  ctx.lineWidth = line / scale;
  ctx.beginPath();
  corners.forEach(([x, y], i) => (i === 0 ? ctx.moveTo(x, y) : ctx.lineTo(x, y)));
  if (pointer) ctx.lineTo(pointer[0], pointer[1]);
  ctx.stroke();
  ctx.fillStyle = "#22d3ee";
  for (const [x, y] of corners) ctx.fillRect(x - 2 / scale, y - 2 / scale, 4 / scale, 4 / scale);
}
