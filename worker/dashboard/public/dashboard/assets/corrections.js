// @ts-check
// A segmentation's unsaved corrections as data: the stored cells deleted, the cells drawn, and the
// steps that undo and redo them. It touches no DOM, so its test runs without a browser; the
// editor (viewer-edit.js) shows it, and the viewer hit-tests and draws without the deleted cells.

/** @typedef {number | string} RoiIndex */
/** @typedef {[number, number]} Point */
/** What the history needs of a cell: the stored cells are told apart by their roi_index. */
/** @typedef {{ props: { roi_index: RoiIndex } }} AnyCell */
/**
 * A step that can be undone: a stored cell deleted, a drawn one added or removed.
 * @template {AnyCell} C
 * @typedef {{ kind: "delete" | "add" | "remove", cell: C }} Step
 */

/**
 * Twice the signed area of a closed ring (the shoelace formula).
 * @param {Point[]} ring
 */
export function shoelace(ring) {
  let sum = 0;
  for (let i = 0; i < ring.length; i++) {
    const [x0, y0] = /** @type {Point} */ (ring[i]);
    const [x1, y1] = /** @type {Point} */ (ring[(i + 1) % ring.length]);
    sum += x0 * y1 - x1 * y0;
  }
  return sum;
}

/**
 * Whether corners placed by hand make a cell: three or more, enclosing at least a pixel.
 * @param {Point[]} corners
 */
export function makesACell(corners) {
  return corners.length >= 3 && Math.abs(shoelace(corners)) >= 2;
}

/** @template {AnyCell} C */
export class Corrections {
  /** @type {Set<RoiIndex>} */
  #deleted;
  /** @type {(roiIndex: RoiIndex) => void} */
  #changed;
  /** @type {C[]} */
  #drawn = [];
  /** @type {Step<C>[]} */
  #done = [];
  /** @type {Step<C>[]} */
  #undone = [];

  /**
   * @param {Set<RoiIndex>} deleted the viewer's own set of deleted stored cells, kept here
   * @param {(roiIndex: RoiIndex) => void} changed told after a stored cell is deleted or brought back
   */
  constructor(deleted, changed) {
    this.#deleted = deleted;
    this.#changed = changed;
  }

  /** @returns {readonly C[]} the cells drawn, in the order drawn */
  get drawn() {
    return this.#drawn;
  }

  get deletedCount() {
    return this.#deleted.size;
  }

  /** @param {RoiIndex} roiIndex */
  isDeleted(roiIndex) {
    return this.#deleted.has(roiIndex);
  }

  get dirty() {
    return this.#deleted.size > 0 || this.#drawn.length > 0;
  }

  get canUndo() {
    return this.#done.length > 0;
  }

  get canRedo() {
    return this.#undone.length > 0;
  }

  /** "Unsaved: 2 deleted, 1 drawn.", or that there is nothing yet. */
  summary() {
    const parts = [];
    if (this.#deleted.size) parts.push(`${this.#deleted.size} deleted`);
    if (this.#drawn.length) parts.push(`${this.#drawn.length} drawn`);
    return parts.length ? `Unsaved: ${parts.join(", ")}.` : "No corrections yet.";
  }

  /**
   * The cells the segmentation would have if saved now.
   * @param {number} stored its cells as saved
   */
  cellCount(stored) {
    return stored - this.#deleted.size + this.#drawn.length;
  }

  /**
   * Deletes a cell: a stored one is hidden, a drawn one removed. A new step forgets what was undone.
   * @param {C & { drawn?: boolean }} cell
   */
  delete(cell) {
    this.#record({ kind: cell.drawn ? "remove" : "delete", cell });
  }

  /** @param {C} cell */
  add(cell) {
    this.#record({ kind: "add", cell });
  }

  /** @returns {Step<C> | undefined} the step taken back, if any */
  undo() {
    const step = this.#done.pop();
    if (step) {
      this.#apply(step, false);
      this.#undone.push(step);
    }
    return step;
  }

  /** @returns {Step<C> | undefined} the step done again, if any */
  redo() {
    const step = this.#undone.pop();
    if (step) {
      this.#apply(step, true);
      this.#done.push(step);
    }
    return step;
  }

  /**
   * Corrections kept from an earlier visit: not steps, so they cannot be undone, only discarded.
   * @param {Iterable<RoiIndex>} deleted
   * @param {Iterable<C>} drawn
   */
  restore(deleted, drawn) {
    for (const roiIndex of deleted) this.#hide(roiIndex, true);
    this.#drawn.push(...drawn);
  }

  /** Brings every deleted cell back and forgets the drawn ones and the history. */
  discard() {
    for (const roiIndex of [...this.#deleted]) this.#hide(roiIndex, false);
    this.#forgetAll();
  }

  /** Once saved, the corrections are the segmentation's: nothing is left unsaved, nothing redrawn. */
  saved() {
    this.#deleted.clear();
    this.#forgetAll();
  }

  #forgetAll() {
    this.#drawn.length = 0;
    this.#done.length = 0;
    this.#undone.length = 0;
  }

  /** @param {Step<C>} step */
  #record(step) {
    this.#apply(step, true);
    this.#done.push(step);
    this.#undone.length = 0;
  }

  /**
   * Does (forward) or undoes a step.
   * @param {Step<C>} step
   * @param {boolean} forward
   */
  #apply({ kind, cell }, forward) {
    if (kind === "delete") this.#hide(cell.props.roi_index, forward);
    else if ((kind === "add") === forward) this.#drawn.push(cell);
    else this.#drawn.splice(this.#drawn.indexOf(cell), 1);
  }

  /**
   * @param {RoiIndex} roiIndex
   * @param {boolean} on
   */
  #hide(roiIndex, on) {
    if (on) this.#deleted.add(roiIndex);
    else this.#deleted.delete(roiIndex);
    this.#changed(roiIndex);
  }
}
