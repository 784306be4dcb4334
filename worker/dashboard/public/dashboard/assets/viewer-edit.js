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
 * @property {Set<RoiIndex>} hidden the stored cells deleted
 * @property {(roiIndex: RoiIndex, on: boolean) => void} setHidden
 * @property {(x: number, y: number) => Cell | null} cellAt the stored cell at an image point
 * @property {(cell: Cell, x: number, y: number) => boolean} contains
 * @property {() => Cell[]} cells every stored cell loaded
 * @property {() => Promise<void>} loadAllOutlines
 * @property {(cell: Cell | null) => void} showCell
 * @property {() => void} scheduleDraw
 * @property {() => void} updateStatus
 */
/** A step that can be undone: a stored cell deleted, a drawn one added or removed. */
/** @typedef {{ kind: "delete" | "add" | "remove", cell: Cell }} Step */
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
 * Twice the signed area of a closed ring (the shoelace formula).
 * @param {Point[]} ring
 */
function shoelace(ring) {
  let sum = 0;
  for (let i = 0; i < ring.length; i++) {
    const [x0, y0] = /** @type {Point} */ (ring[i]);
    const [x1, y1] = /** @type {Point} */ (ring[(i + 1) % ring.length]);
    sum += x0 * y1 - x1 * y0;
  }
  return sum;
}

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

/**
 * @param {EditorHost} viewer
 * @returns {Editor | null} null on a page without the edit card
 */
export function setUpEditing(viewer) {
  const { root, segmentationId, imageId } = viewer;
  const card = document.getElementById("edit-card");
  if (!card || !segmentationId) return null;
  /** @param {string} id */
  const $ = (id) => byId(id);
  /** @param {string} id */
  const button = (id) => byId(id, HTMLButtonElement);
  const storageKey = `cellseg-corrections-${segmentationId}`;

  let editing = false;
  /** Corners of the cell being drawn, in image pixels, or null. @type {Point[] | null} */
  let drawing = null;
  /** The pointer in image pixels, for the rubber band. @type {Point | null} */
  let pointer = null;
  /** @type {Cell | null} */
  let selected = null;
  /** @type {Cell[]} */
  const added = [];
  let addedCount = 0;
  /** @type {Step[]} */
  const done = [];
  /** @type {Step[]} */
  const undone = [];

  const dirty = () => viewer.hidden.size > 0 || added.length > 0;

  function persist() {
    if (dirty()) localStorage.setItem(storageKey, JSON.stringify({ deleted: [...viewer.hidden], added: added.map((c) => c.ring.slice(0, -1)) }));
    else localStorage.removeItem(storageKey);
  }

  function refresh() {
    const deleted = viewer.hidden.size;
    const parts = [];
    if (deleted) parts.push(`${deleted} deleted`);
    if (added.length) parts.push(`${added.length} drawn`);
    $("edit-summary").textContent = parts.length ? `Unsaved: ${parts.join(", ")}.` : "No corrections yet.";
    button("undo").disabled = done.length === 0;
    button("redo").disabled = undone.length === 0;
    button("delete-cell").disabled = !selected;
    $("draw-cell").classList.toggle("active", drawing !== null);
    button("discard-corrections").disabled = !dirty();
    // The note kept from a last visit names the controls shown: "Edit cells" until editing.
    $("restored-note").textContent =
      `Unsaved corrections from your last visit are back: ${editing ? "save or discard them below" : "choose Edit cells to save or discard them"}.`;
    button("save-corrections").disabled = !dirty() || Boolean(viewer.saveProblem);
    $("cell-count").textContent = (viewer.roiCount - deleted + added.length).toLocaleString("en-US");
    root.dataset.corrections = String(deleted + added.length);
    root.dataset.drawing = String(drawing !== null);
    viewer.updateStatus();
    viewer.scheduleDraw();
  }

  /**
   * Does (forward) or undoes a step: "delete" hides a stored cell, "add" and "remove" a drawn one.
   * @param {Step} step
   * @param {boolean} forward
   */
  function apply({ kind, cell }, forward) {
    if (kind === "delete") viewer.setHidden(cell.props.roi_index, forward);
    else if ((kind === "add") === forward) added.push(cell);
    else added.splice(added.indexOf(cell), 1);
    if (selected === cell) select(null);
  }

  /** @param {Step} step */
  function act(step) {
    apply(step, true);
    done.push(step);
    undone.length = 0;
    persist();
    refresh();
  }

  function undo() {
    const step = done.pop();
    if (!step) return;
    apply(step, false);
    undone.push(step);
    persist();
    refresh();
  }

  function redo() {
    const step = undone.pop();
    if (!step) return;
    apply(step, true);
    done.push(step);
    persist();
    refresh();
  }

  /** @param {Cell | null} cell */
  function select(cell) {
    selected = cell;
    viewer.showCell(cell);
    root.dataset.selectedCell = cell ? String(cell.props.roi_index) : "";
    refresh();
  }

  function deleteSelected() {
    if (!selected) return;
    const cell = selected;
    select(null);
    act({ kind: cell.drawn ? "remove" : "delete", cell });
  }

  function finishDrawing() {
    if (!drawing) return;
    const corners = drawing;
    drawing = null;
    if (corners.length >= 3 && Math.abs(shoelace(corners)) >= 2) act({ kind: "add", cell: drawnCell(corners, ++addedCount) });
    else refresh();
  }

  /** @param {boolean} on */
  function setEditing(on) {
    editing = on;
    drawing = null;
    select(null);
    $("edit-tools").hidden = !on;
    $("edit-toggle").textContent = on ? "Stop editing" : "Edit cells";
    root.classList.toggle("editing", on);
    root.dataset.editing = String(on);
    refresh();
  }

  async function save() {
    const saveButton = button("save-corrections");
    saveButton.disabled = true;
    $("edit-summary").textContent = "Saving…";
    try {
      await viewer.loadAllOutlines();
      const features = [];
      for (const cell of viewer.cells()) {
        if (!viewer.hidden.has(cell.props.roi_index))
          features.push({ type: "Feature", properties: {}, geometry: { type: "Polygon", coordinates: [cell.ring] } });
      }
      for (const cell of added) features.push({ type: "Feature", properties: {}, geometry: { type: "Polygon", coordinates: [cell.ring] } });
      const form = new FormData();
      form.append("image_id", imageId);
      form.append("file", new Blob([JSON.stringify({ type: "FeatureCollection", features })], { type: "application/geo+json" }), "corrections.geojson");
      /** @type {{ segmentation_id: string }} */
      const result = await api("/segmentation", { method: "POST", body: form });
      localStorage.removeItem(storageKey);
      viewer.hidden.clear();
      added.length = 0;
      window.location.href = `/dashboard/segmentations/${result.segmentation_id}`;
    } catch (error) {
      $("edit-summary").textContent = `Not saved: ${error instanceof Error ? error.message : String(error)}`;
      saveButton.disabled = false;
    }
  }

  function discard() {
    if (!window.confirm("Discard the unsaved corrections?")) return;
    for (const index of [...viewer.hidden]) viewer.setHidden(index, false);
    added.length = 0;
    done.length = 0;
    undone.length = 0;
    persist();
    $("restored-note").hidden = true;
    select(null);
  }

  // Corrections left unsaved on this segmentation last time come back, and say so.
  /** @type {{ deleted?: RoiIndex[], added?: Point[][] } | null} */
  const stored = JSON.parse(localStorage.getItem(storageKey) ?? "null");
  if (stored) {
    for (const index of stored.deleted ?? []) viewer.setHidden(index, true);
    for (const corners of stored.added ?? []) added.push(drawnCell(corners, ++addedCount));
    $("restored-note").hidden = false;
  }

  $("edit-toggle").addEventListener("click", () => setEditing(!editing));
  $("draw-cell").addEventListener("click", () => {
    drawing = drawing ? null : [];
    refresh();
  });
  $("delete-cell").addEventListener("click", deleteSelected);
  $("undo").addEventListener("click", undo);
  $("redo").addEventListener("click", redo);
  $("save-corrections").addEventListener("click", save);
  $("discard-corrections").addEventListener("click", discard);
  if (viewer.saveProblem) $("save-problem").textContent = viewer.saveProblem;
  document.addEventListener("keydown", (e) => {
    if (!editing || e.target instanceof HTMLInputElement) return;
    const key = e.key.toLowerCase();
    if ((e.ctrlKey || e.metaKey) && key === "z") {
      e.preventDefault();
      if (e.shiftKey) redo();
      else undo();
    } else if ((e.ctrlKey || e.metaKey) && key === "y") {
      e.preventDefault();
      redo();
    } else if (key === "backspace" && drawing?.length) {
      e.preventDefault();
      drawing.pop(); // takes back the last corner placed
      refresh();
    } else if (key === "delete" || key === "backspace") {
      e.preventDefault();
      deleteSelected();
    } else if (key === "enter") finishDrawing();
    else if (key === "escape") {
      drawing = null;
      refresh();
    }
  });
  window.addEventListener("beforeunload", (e) => {
    if (!dirty()) return;
    e.preventDefault();
    e.returnValue = ""; // the browser's own "Leave site?" question
  });
  refresh();

  return {
    get active() {
      return editing;
    },
    /**
     * A click (not a drag) on the image, at image pixel (x, y).
     * @param {number} x
     * @param {number} y
     */
    click(x, y) {
      if (!editing) return;
      if (drawing) {
        drawing.push([Math.round(x), Math.round(y)]);
        refresh();
        return;
      }
      select(added.findLast((c) => viewer.contains(c, x, y)) ?? viewer.cellAt(x, y));
    },
    doubleClick() {
      if (!editing || !drawing) return;
      // The double-click's two clicks added the same corner twice: keep one.
      const last = drawing.at(-1);
      const before = drawing.at(-2);
      if (last && before && last[0] === before[0] && last[1] === before[1]) drawing.pop();
      finishDrawing();
    },
    /**
     * @param {number} x
     * @param {number} y
     */
    pointerAt(x, y) {
      pointer = [x, y];
      if (drawing?.length) viewer.scheduleDraw();
    },
    /**
     * Drawn cells, the selection and the outline being drawn, over the image (the context is in
     * image pixels, `scale` screen pixels to one); `line` is the outlines' width in screen pixels.
     * @param {CanvasRenderingContext2D} ctx
     * @param {number} scale
     * @param {number} line
     */
    drawOverlay(ctx, scale, line) {
      ctx.lineWidth = (line + 0.5) / scale;
      ctx.strokeStyle = "#22d3ee";
      ctx.fillStyle = "rgba(34, 211, 238, 0.2)";
      for (const cell of added) {
        ctx.fill(cell.path);
        ctx.stroke(cell.path);
      }
      if (selected) {
        // Two tones, so the selection stands out on any stain: a white line inside a dark one
        // shows on black fluorescence, white bright field and pink or red H&E alike.
        ctx.fillStyle = "rgba(255, 255, 255, 0.25)";
        ctx.fill(selected.path);
        ctx.strokeStyle = "rgba(2, 6, 23, 0.9)";
        ctx.lineWidth = (line + 4) / scale;
        ctx.stroke(selected.path);
        ctx.strokeStyle = "#ffffff";
        ctx.lineWidth = (line + 0.5) / scale;
        ctx.stroke(selected.path);
      }
      if (drawing?.length) {
        ctx.strokeStyle = "#22d3ee";
        ctx.lineWidth = line / scale;
        ctx.beginPath();
        drawing.forEach(([x, y], i) => (i === 0 ? ctx.moveTo(x, y) : ctx.lineTo(x, y)));
        if (pointer) ctx.lineTo(pointer[0], pointer[1]);
        ctx.stroke();
        ctx.fillStyle = "#22d3ee";
        for (const [x, y] of drawing) ctx.fillRect(x - 2 / scale, y - 2 / scale, 4 / scale, 4 / scale);
      }
      return added.length;
    },
  };
}
