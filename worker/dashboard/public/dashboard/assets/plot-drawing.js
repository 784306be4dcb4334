// @ts-check
// Drawing the segmentation page's plots on a <canvas>, without a charting library (the page's
// Content-Security-Policy lets it run only the worker's own scripts): a histogram of one column's
// values, a density scatter of two, their axes, and the selected range over them. Pure functions of
// the values and a frame; plots.js owns the card, the data and the pointer.

/** @typedef {[number, number]} Range a low and a high value, in a column's units */
/** @typedef {[number, number, number]} RGB */
/** @typedef {{ min: number, max: number, finite: number, integers: boolean }} Extent */
/** @typedef {{ lo: number, hi: number, width: number, counts: Uint32Array, finite: number, integers: boolean }} Histogram */
/** @typedef {{ x: Range, y?: Range }} Selection a range on x; with y, a rectangle on a scatter */
/**
 * @typedef {object} Frame where a plot lies on its canvas (CSS pixels) and its axes' ranges
 * @property {number} left
 * @property {number} top
 * @property {number} width
 * @property {number} height
 * @property {Range} x
 * @property {Range} y
 * @property {(v: number) => number} toX
 * @property {(v: number) => number} toY
 * @property {(px: number) => number} fromX
 * @property {(py: number) => number} fromY
 * @property {(px: number, py: number) => boolean} contains
 */

/** The colour of a selection, here and on the viewer's outlines (viewer.js), so the two read as one. */
export const HIGHLIGHT = "#d946ef";
const INK = "#1b2330";
const AXIS = "#98a2b3";
const BARS = "#2563eb";
/** Histograms have about this many bins. */
const BINS = 40;

/**
 * The smallest and largest finite value, how many there are, and whether every one is a whole number.
 * @param {Iterable<number>} values
 * @returns {Extent}
 */
export function extent(values) {
  let min = Infinity;
  let max = -Infinity;
  let finite = 0;
  let integers = true;
  for (const v of values) {
    if (!Number.isFinite(v)) continue; // NaN: the cell has no value (an empty CSV field)
    finite++;
    if (v < min) min = v;
    if (v > max) max = v;
    if (integers && !Number.isInteger(v)) integers = false;
  }
  return { min, max, finite, integers };
}

/**
 * A scatter axis's range: [min, max] and a margin, so the extreme points do not sit on the axes; some width around a constant column's value.
 * @param {Extent} extent
 * @returns {Range}
 */
export function domainOf({ min, max }) {
  const margin = max > min ? (max - min) * 0.04 : Math.abs(min) * 0.05 || 0.5;
  return [min - margin, max + margin];
}

/**
 * About 40 bins over the values' range, or null when no cell has a value. Whole-number columns
 * (area_px, bbox_w) get bins a whole number wide centred on integers, so no bin catches one
 * integer more than its neighbours and shows a false spike.
 * @param {Float64Array} values
 * @returns {Histogram | null}
 */
export function histogram(values) {
  const range = extent(values);
  if (range.finite === 0) return null;
  const { min, max, integers } = range;
  let lo;
  let width;
  let bins;
  if (integers) {
    width = Math.max(1, Math.ceil((max - min + 1) / BINS));
    bins = Math.ceil((max - min + 1) / width);
    lo = min - 0.5;
  } else if (max > min) {
    bins = BINS;
    lo = min;
    width = (max - min) / bins;
  } else {
    // One value, not a whole number: one bin with some width around it.
    width = Math.abs(min) * 0.1;
    lo = min - width / 2;
    bins = 1;
  }
  const counts = new Uint32Array(bins);
  for (const v of values) {
    if (!Number.isFinite(v)) continue;
    const bin = Math.min(bins - 1, Math.floor((v - lo) / width));
    counts[bin] = /** @type {number} */ (counts[bin]) + 1;
  }
  return { lo, hi: lo + bins * width, width, counts, finite: range.finite, integers };
}

/**
 * Round values between lo and hi, 1, 2 or 5 times a power of ten apart: the spacing that makes
 * closest to `count` of them; `whole`: whole numbers only (a count of cells, a number of pixels).
 * @param {number} lo
 * @param {number} hi
 * @param {number} count
 * @returns {number[]}
 */
function niceTicks(lo, hi, count, whole = false) {
  const span = hi - lo;
  if (!(span > 0)) return [lo];
  const power = 10 ** Math.floor(Math.log10(span / count));
  const steps = [1, 2, 5, 10].map((m) => (whole ? Math.max(1, m * power) : m * power));
  const step = steps.reduce((best, s) => (Math.abs(span / s - count) < Math.abs(span / best - count) ? s : best));
  const ticks = [];
  for (let i = Math.ceil(lo / step); i * step <= hi + step * 1e-9; i++) ticks.push(Number((i * step).toPrecision(12)));
  return ticks;
}

/**
 * A value as short as an axis or a line of text needs: 1,234 · 0.0123 · 2.5e+6.
 * @param {number} v
 */
export function formatValue(v) {
  const size = Math.abs(v);
  if (v !== 0 && (size >= 1e6 || size < 1e-3)) return v.toExponential(2);
  return Number(v.toPrecision(4)).toLocaleString("en-US", { maximumFractionDigits: 6 });
}

const compact = new Intl.NumberFormat("en-US", { notation: "compact", maximumSignificantDigits: 3 });

/**
 * A tick's value, short enough to leave room for the axis's name: 30K, 1.2M, 5e-4.
 * @param {number} v
 */
function formatTick(v) {
  const size = Math.abs(v);
  if (size >= 1e4) return compact.format(v);
  if (v !== 0 && size < 1e-3) return v.toExponential();
  return formatValue(v);
}

/**
 * Where a plot lies on its canvas, in CSS pixels, and the value ranges of its axes: `toX`/`toY`
 * map a value to a pixel, `fromX`/`fromY` a pixel back to a value (clamped to the axis).
 * @param {HTMLCanvasElement} canvas
 * @param {Range} x
 * @param {Range} y
 * @returns {Frame}
 */
export function frameOf(canvas, x, y) {
  const left = 50;
  const top = 8;
  const width = canvas.clientWidth - left - 14;
  const height = canvas.clientHeight - top - 36;
  /** @type {(v: number, range: Range) => number} */
  const clamp = (v, [lo, hi]) => Math.min(hi, Math.max(lo, v));
  return {
    left,
    top,
    width,
    height,
    x,
    y,
    toX: (v) => left + ((v - x[0]) / (x[1] - x[0])) * width,
    toY: (v) => top + height - ((v - y[0]) / (y[1] - y[0])) * height,
    fromX: (px) => clamp(x[0] + ((px - left) / width) * (x[1] - x[0]), x),
    fromY: (py) => clamp(y[0] + ((top + height - py) / height) * (y[1] - y[0]), y),
    contains: (px, py) => px >= left && px <= left + width && py >= top && py <= top + height,
  };
}

/**
 * A 2-d context scaled so that one unit is one CSS pixel, after sizing the canvas to its box.
 * @param {HTMLCanvasElement} canvas
 * @returns {CanvasRenderingContext2D}
 */
export function contextFor(canvas) {
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(canvas.clientWidth * dpr);
  canvas.height = Math.round(canvas.clientHeight * dpr);
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  if (!ctx) throw new Error("the browser gave no 2-d canvas context");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, canvas.clientWidth, canvas.clientHeight);
  return ctx;
}

/**
 * Axes with round ticks and their values, the x column's name below, the y axis's name beside;
 * `whole` says which axes hold whole numbers only, whose ticks then fall on whole numbers.
 * @param {CanvasRenderingContext2D} ctx
 * @param {Frame} frame
 * @param {string} xLabel
 * @param {string} yLabel
 * @param {{ x: boolean, y: boolean }} [whole]
 */
export function drawAxes(ctx, frame, xLabel, yLabel, whole = { x: false, y: false }) {
  const { left, top, width, height } = frame;
  ctx.strokeStyle = AXIS;
  ctx.fillStyle = INK;
  ctx.lineWidth = 1;
  ctx.font = "11px system-ui, sans-serif";
  ctx.beginPath();
  ctx.moveTo(left, top);
  ctx.lineTo(left, top + height);
  ctx.lineTo(left + width, top + height);
  ctx.stroke();
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  const right = ctx.canvas.clientWidth;
  for (const v of niceTicks(frame.x[0], frame.x[1], 5, whole.x)) {
    const px = frame.toX(v);
    ctx.beginPath();
    ctx.moveTo(px, top + height);
    ctx.lineTo(px, top + height + 4);
    ctx.stroke();
    // The last label is kept inside the canvas rather than cut at its edge.
    const text = formatTick(v);
    ctx.fillText(text, Math.min(px, right - ctx.measureText(text).width / 2), top + height + 6);
  }
  ctx.fillText(xLabel, left + width / 2, top + height + 21);
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const v of niceTicks(frame.y[0], frame.y[1], 4, whole.y)) {
    const py = frame.toY(v);
    ctx.beginPath();
    ctx.moveTo(left - 4, py);
    ctx.lineTo(left, py);
    ctx.stroke();
    ctx.fillText(formatTick(v), left - 6, py);
  }
  ctx.save();
  ctx.translate(10, top + height / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textAlign = "center";
  ctx.fillText(yLabel, 0, 0);
  ctx.restore();
}

/**
 * The histogram's bars, from the x axis up to each bin's count.
 * @param {CanvasRenderingContext2D} ctx
 * @param {Frame} frame
 * @param {Histogram} bins
 */
export function drawBars(ctx, frame, bins) {
  ctx.fillStyle = BARS;
  bins.counts.forEach((count, i) => {
    if (count === 0) return;
    const x0 = frame.toX(bins.lo + i * bins.width);
    const x1 = frame.toX(bins.lo + (i + 1) * bins.width);
    const y = frame.toY(count);
    // A gap of a pixel between bars where they are wide enough for one.
    ctx.fillRect(x0, y, Math.max(1, x1 - x0 - (x1 - x0 > 3 ? 1 : 0)), frame.top + frame.height - y);
  });
}

/**
 * The scatter as density: the points binned into squares of `cell` CSS pixels, each square shaded
 * by how many fall in it (on a log scale, so a few stray cells still show beside a dense cloud).
 * Half a million points cost a pass over the values and at most one rectangle per square.
 * @param {CanvasRenderingContext2D} ctx
 * @param {Frame} frame
 * @param {Float64Array} xs
 * @param {Float64Array} ys
 */
export function drawDensity(ctx, frame, xs, ys) {
  const cell = xs.length > 50_000 ? 1 : xs.length > 5_000 ? 2 : 3;
  const columns = Math.max(1, Math.floor(frame.width / cell));
  const rows = Math.max(1, Math.floor(frame.height / cell));
  const counts = new Uint32Array(columns * rows);
  let most = 0;
  for (let i = 0; i < xs.length; i++) {
    const x = /** @type {number} */ (xs[i]);
    const y = /** @type {number} */ (ys[i]);
    if (!Number.isFinite(x) || !Number.isFinite(y)) continue;
    const column = Math.min(columns - 1, Math.floor(((x - frame.x[0]) / (frame.x[1] - frame.x[0])) * columns));
    const row = Math.min(rows - 1, Math.floor(((frame.y[1] - y) / (frame.y[1] - frame.y[0])) * rows));
    const at = row * columns + column;
    const inSquare = /** @type {number} */ (counts[at]) + 1;
    counts[at] = inSquare;
    if (inSquare > most) most = inSquare;
  }
  const scale = Math.log1p(most) || 1;
  for (const [at, inSquare] of counts.entries()) {
    if (inSquare === 0) continue;
    const t = Math.log1p(inSquare) / scale; // (0, 1]
    // Light blue for one cell, through the bars' blue, to a deep indigo for the densest square.
    const [r, g, b] = t < 0.5 ? mix([96, 165, 250], [37, 99, 235], t * 2) : mix([37, 99, 235], [30, 27, 75], (t - 0.5) * 2);
    ctx.fillStyle = `rgb(${r}, ${g}, ${b})`;
    ctx.fillRect(frame.left + (at % columns) * cell, frame.top + Math.floor(at / columns) * cell, cell, cell);
  }
}

/** @type {(from: RGB, to: RGB, t: number) => RGB} */
const mix = ([r0, g0, b0], [r1, g1, b1], t) => [Math.round(r0 + (r1 - r0) * t), Math.round(g0 + (g1 - g0) * t), Math.round(b0 + (b1 - b0) * t)];

/**
 * The selected ranges shaded over the plot: a band across a histogram, a rectangle on a scatter.
 * @param {CanvasRenderingContext2D} ctx
 * @param {Frame} frame
 * @param {Selection} selection
 */
export function drawSelection(ctx, frame, selection) {
  const [x0, x1] = [frame.toX(selection.x[0]), frame.toX(selection.x[1])];
  const [y0, y1] = selection.y ? [frame.toY(selection.y[0]), frame.toY(selection.y[1])] : [frame.top + frame.height, frame.top];
  ctx.fillStyle = "rgba(217, 70, 239, 0.18)";
  ctx.strokeStyle = HIGHLIGHT;
  ctx.lineWidth = 1.5;
  ctx.fillRect(x0, y1, x1 - x0, y0 - y1);
  ctx.strokeRect(x0, y1, x1 - x0, y0 - y1);
}
