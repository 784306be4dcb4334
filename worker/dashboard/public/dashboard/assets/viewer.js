// @ts-check
// The viewer: the image's contrast-stretched preview with, for a segmentation, every cell's outline
// on a canvas, zoom (wheel, buttons) and pan (drag), and the cell under the pointer with its
// measurements. On an image's own page it shows the preview alone, before any segmentation.
//
// The preview is a pyramid of 512-px tiles (schema/preview-tiles.ts): the coarsest level is loaded
// whole and always drawn underneath; the level that matches the zoom is fetched a visible tile at a
// time, and tiles far from view are forgotten, so a large image costs only what is on screen. A
// slide predicted block-wise also has a full-resolution level (the finest level of its pyramid is
// at most 4096², worker/services/previews.ts): a tile pack per block core, whose tiles are drawn over
// the pyramid's once the view shows more than half the image's resolution, so at full zoom the
// outlines lie over the image's own pixels.
//
// Outlines come the same way: the cells of 1024-px tiles of the image (worker/services/outline-tiles.ts,
// the rois.geojson export's features cut by where each cell's bounding box starts), asked for as
// they come into view once the view holds few enough cells to draw; a whole slide of half a
// million cells shows its preview until one zooms in.
//
// A range chosen on the page's plots (plots.js) highlights the outlines of the cells in it, tested
// on each cell's own measurements from its outline tile, and dims the others.
import { ApiError, api, byId, optionalById } from "./dashboard.js";
import { HIGHLIGHT, setUpPlots } from "./plots.js";
import { setUpEditing } from "./viewer-edit.js";

/** @typedef {[number, number]} Point an (x, y) in image pixels */
/** A cell's number in its segmentation (roi_index); a cell drawn in edit mode is "new 1", "new 2"… */
/** @typedef {number | string} RoiIndex */
/**
 * A cell as the viewer holds it: its outline (a closed ring), a path to draw it, its bounding box
 * [x0, y0, x1, y1] and its properties (the rois.geojson feature's: measurements, roi_index).
 * @typedef {{ ring: Point[], path: Path2D, bbox: [number, number, number, number], props: CellProps, drawn?: boolean }} Cell
 */
/** @typedef {Record<string, unknown> & { roi_index: RoiIndex }} CellProps */
/** @typedef {{ type: "Feature", properties: CellProps, geometry: { type: "Polygon", coordinates: Point[][] } }} Feature */
/** A loaded (or loading) preview tile; `used`: the last draw that wanted it. */
/** @typedef {{ image: HTMLImageElement, ready: boolean, level: number, used: number }} PreviewTile */
/** One level of the preview pyramid (schema/preview-tiles.ts): image pixels per tile pixel, tiles across and down. */
/** @typedef {{ factor: number, columns: number, rows: number }} PyramidLevel */
/** @typedef {{ tile: number, levels: PyramidLevel[] }} Pyramid */
/** A block's core in image pixels. */
/** @typedef {{ x: number, y: number, width: number, height: number }} Core */
/** The full-resolution level: tiles of `tile` image pixels from each core's corner (tile (c, r) of core b at b.x + c × tile, b.y + r × tile). */
/** @typedef {{ tile: number, blocks: Core[] }} FullLevel */
/**
 * An outline tile: its cells, one path of those not deleted, and, with a plot's range chosen,
 * the paths split by it (`marked`, made once per range).
 * @typedef {{ cells: Cell[], path: Path2D, ready: boolean, marked?: Marked | null }} OutlineTile
 */
/** @typedef {{ version: number, inRange: Path2D, others: Path2D, count: number }} Marked */
/** The grid of outline tiles the server cuts (worker/services/outline-tiles.ts). */
/** @typedef {{ tile: number, columns: number, rows: number, roi_count: number, max_extent: number }} OutlineGrid */
/** @typedef {import("./plots.js").CellTest} CellTest */

const root = byId("viewer");
const canvas = byId("viewer-canvas", HTMLCanvasElement);
const status = byId("viewer-status");
const context = canvas.getContext("2d");
if (!context) throw new Error("the browser gave no 2-d canvas context");
const ctx = context;
const id = root.dataset.segmentationId;
const imageId = root.dataset.imageId ?? "";
const width = Number(root.dataset.width);
const height = Number(root.dataset.height);
/** Micrometres per image pixel along x (the segmentation's or the file's), for the scale bar; absent when unknown. */
const pixelSizeUm = Number(root.dataset.pixelSizeXUm) || null;

const view = { scale: 1, x: 0, y: 0 }; // screen = image * scale + (x, y), in CSS pixels
/** A one-bitmap preview of a segmentation made before images had tiled previews. @type {HTMLImageElement | null} */
let legacyPreview = null;
/** The tile index once the image's preview exists. @type {Pyramid | null} */
let pyramid = null;
/** The full-resolution level, when the image has one. @type {FullLevel | null} */
let fullLevel = null;
/** The cache's level of full-resolution tiles. */
const FULL = -1;
/**
 * The full-resolution level is drawn where fewer image pixels than this fall along a device pixel
 * (more than half the image's resolution on screen; further out the pyramid's finest level is close
 * enough, and a screenful of full-resolution tiles would be hundreds).
 */
const FULL_RESOLUTION_BELOW = 2;
/** "level/column/row" (or "full/block/column/row") -> { image, ready }, oldest first (a Map keeps insertion order). @type {Map<string, PreviewTile>} */
const tiles = new Map();
const MAX_TILES = 160;
let tilesLoaded = 0;
/** Counts the draws: a tile the current draw wants is never forgotten. */
let drawGeneration = 0;
/** Outline tiles: the grid the server cuts, then "column/row" -> { cells, path, ready }, oldest first. */
/** @type {OutlineGrid | null} */
let outlineGrid = null;
/** @type {Map<string, OutlineTile>} */
const outlineTiles = new Map();
const MAX_OUTLINE_TILES = 64;
/** Above this many cells expected in view, outlines would be sub-pixel clutter and slow: none are asked for. */
const MAX_CELLS_IN_VIEW = 40_000;
let outlinesTooMany = false;
/** @type {string | null} */
let outlineProblem = null;
/** @type {Cell | null} */
let hovered = null;
const GRID = 64;
/** "gx,gy" -> cells whose bounding box touches that grid square. @type {Map<string, Cell[]>} */
const grid = new Map();
/** @type {string | null} */
let previewNote = null;
/** Cells deleted in edit mode (their roi_index), left out of the outlines and of hit-testing. @type {Set<RoiIndex>} */
const hidden = new Set();
/** roi_index -> the loaded outline tile that holds the cell. @type {Map<RoiIndex, OutlineTile>} */
const tileOfCell = new Map();
/** @type {import("./viewer-edit.js").Editor | null} */
let editor = null;
/** The plots' chosen range as a test of a cell's properties, or null; `highlightVersion` counts its changes. @type {CellTest | null} */
let highlight = null;
let highlightVersion = 0;
/** How much of the outline opacity the cells outside a chosen range keep. */
const DIMMED = 0.3;

// A segmentation's controls; an image's own page shows its preview alone, without them.
const showOutlines = optionalById("show-outlines", HTMLInputElement);
const opacity = optionalById("outline-opacity", HTMLInputElement);

/**
 * The level whose pixels are closest to, and no coarser than, the screen's at this zoom.
 * @param {Pyramid} pyramid
 */
function levelForZoom(pyramid) {
  const imagePixelsPerScreenPixel = imagePixelsPerDevicePixel();
  let chosen = 0;
  pyramid.levels.forEach((level, i) => {
    if (level.factor <= imagePixelsPerScreenPixel) chosen = i;
  });
  return chosen;
}

function imagePixelsPerDevicePixel() {
  return 1 / (view.scale * (window.devicePixelRatio || 1));
}

/**
 * A preview tile, from the cache or asked for now (it draws again once loaded).
 * @param {Pyramid} pyramid
 * @param {number} level
 * @param {number} column
 * @param {number} row
 * @returns {PreviewTile}
 */
function tile(pyramid, level, column, row) {
  return cachedTile(`${level}/${column}/${row}`, `/dashboard/api/images/${imageId}/preview/${level}/${column}/${row}`, level, () => {
    if (pyramid.levels[level]?.factor === pyramid.levels[0]?.factor) root.dataset.finestTilesLoaded = String(Number(root.dataset.finestTilesLoaded ?? 0) + 1);
  });
}

/**
 * A tile of the cache, or asked for now from `src` (it draws again once loaded). The oldest tiles
 * beyond MAX_TILES are forgotten, except the coarsest level's and those this draw wants.
 * @param {string} key
 * @param {string} src
 * @param {number} level the pyramid's level, or FULL
 * @param {() => void} onLoad
 * @returns {PreviewTile}
 */
function cachedTile(key, src, level, onLoad) {
  let entry = tiles.get(key);
  if (entry) {
    tiles.delete(key); // most recently used last
    tiles.set(key, entry);
    entry.used = drawGeneration;
    return entry;
  }
  const made = { image: new Image(), ready: false, level, used: drawGeneration };
  entry = made;
  made.image.onload = () => {
    made.ready = true;
    tilesLoaded++;
    onLoad();
    root.dataset.tilesLoaded = String(tilesLoaded);
    scheduleDraw();
  };
  entry.image.src = src;
  tiles.set(key, entry);
  const coarsest = pyramid ? pyramid.levels.length - 1 : 0;
  for (const [k, e] of tiles) {
    if (tiles.size <= MAX_TILES) break;
    if (e.level !== coarsest && e.used !== drawGeneration) tiles.delete(k);
  }
  return entry;
}

/**
 * Draws the full-resolution tiles in view, of each block core that meets it, asking for those not
 * yet loaded.
 * @param {FullLevel} full
 */
function drawFullResolution(full) {
  const { x0, y0, x1, y1 } = visibleRegion();
  const side = full.tile;
  full.blocks.forEach((core, block) => {
    if (core.x >= x1 || core.y >= y1 || core.x + core.width <= x0 || core.y + core.height <= y0) return;
    const lastColumn = Math.min(Math.ceil(core.width / side) - 1, Math.floor((x1 - core.x) / side));
    const lastRow = Math.min(Math.ceil(core.height / side) - 1, Math.floor((y1 - core.y) / side));
    for (let row = Math.max(0, Math.floor((y0 - core.y) / side)); row <= lastRow; row++) {
      for (let column = Math.max(0, Math.floor((x0 - core.x) / side)); column <= lastColumn; column++) {
        const src = `/dashboard/api/images/${imageId}/full/${block}/${column}/${row}`;
        const { image, ready } = cachedTile(`full/${block}/${column}/${row}`, src, FULL, () => {
          root.dataset.fullTilesLoaded = String(Number(root.dataset.fullTilesLoaded ?? 0) + 1);
        });
        if (ready) ctx.drawImage(image, core.x + column * side, core.y + row * side, image.naturalWidth, image.naturalHeight);
      }
    }
  });
}

/**
 * Draws a level's tiles that are in view, asking for those not yet loaded.
 * @param {Pyramid} pyramid
 * @param {number} level
 */
function drawLevel(pyramid, level) {
  const { factor, columns, rows } = /** @type {PyramidLevel} */ (pyramid.levels[level]);
  const span = pyramid.tile * factor; // image pixels per tile
  const x0 = -view.x / view.scale;
  const y0 = -view.y / view.scale;
  const x1 = x0 + canvas.clientWidth / view.scale;
  const y1 = y0 + canvas.clientHeight / view.scale;
  for (let row = Math.max(0, Math.floor(y0 / span)); row <= Math.min(rows - 1, Math.floor(y1 / span)); row++) {
    for (let column = Math.max(0, Math.floor(x0 / span)); column <= Math.min(columns - 1, Math.floor(x1 / span)); column++) {
      const { image, ready } = tile(pyramid, level, column, row);
      if (!ready) continue;
      // A tile's last pixels may average a partial box at the image's edge: clip to the image.
      const [left, top] = [column * span, row * span];
      ctx.drawImage(image, left, top, Math.min(width, left + image.naturalWidth * factor) - left, Math.min(height, top + image.naturalHeight * factor) - top);
    }
  }
}

let drawPending = false;
function scheduleDraw() {
  if (drawPending) return;
  drawPending = true;
  requestAnimationFrame(() => {
    drawPending = false;
    draw();
  });
}

/** @param {Cell} cell */
function index(cell) {
  for (let gx = Math.floor(cell.bbox[0] / GRID); gx <= Math.floor(cell.bbox[2] / GRID); gx++) {
    for (let gy = Math.floor(cell.bbox[1] / GRID); gy <= Math.floor(cell.bbox[3] / GRID); gy++) {
      const key = `${gx},${gy}`;
      const cells = grid.get(key);
      if (cells) cells.push(cell);
      else grid.set(key, [cell]);
    }
  }
}

/**
 * @param {Feature} feature
 * @returns {Cell}
 */
function toCell(feature) {
  const ring = feature.geometry.coordinates[0] ?? [];
  const path = new Path2D();
  let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
  ring.forEach(([x, y], i) => {
    if (i === 0) path.moveTo(x, y);
    else path.lineTo(x, y);
    x0 = Math.min(x0, x);
    y0 = Math.min(y0, y);
    x1 = Math.max(x1, x);
    y1 = Math.max(y1, y);
  });
  path.closePath();
  return { ring, path, bbox: [x0, y0, x1, y1], props: feature.properties };
}

/**
 * Even-odd ray casting (the classic point-in-polygon test).
 * @param {Point[]} ring
 * @param {number} x
 * @param {number} y
 */
function contains(ring, x, y) {
  let inside = false;
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
    const [xi, yi] = /** @type {Point} */ (ring[i]);
    const [xj, yj] = /** @type {Point} */ (ring[j]);
    if (yi > y !== yj > y && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

/**
 * The cell (not deleted) at image point (x, y), or null.
 * @param {number} x
 * @param {number} y
 */
function cellAt(x, y) {
  for (const cell of grid.get(`${Math.floor(x / GRID)},${Math.floor(y / GRID)}`) ?? []) {
    const [x0, y0, x1, y1] = cell.bbox;
    if (x >= x0 && x <= x1 && y >= y0 && y <= y1 && !hidden.has(cell.props.roi_index) && contains(cell.ring, x, y)) return cell;
  }
  return null;
}

function resize() {
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(canvas.clientWidth * dpr);
  canvas.height = Math.round(canvas.clientHeight * dpr);
  draw();
}

function fitToView() {
  const scale = Math.min(canvas.clientWidth / width, canvas.clientHeight / height);
  view.scale = scale;
  view.x = (canvas.clientWidth - width * scale) / 2;
  view.y = (canvas.clientHeight - height * scale) / 2;
  draw();
}

/**
 * Zooms by `factor` about screen point (sx, sy), in CSS pixels from the canvas's corner.
 * @param {number} factor
 * @param {number} sx
 * @param {number} sy
 */
function zoomAt(factor, sx, sy) {
  const scale = Math.min(64, Math.max(0.02, view.scale * factor));
  view.x = sx - ((sx - view.x) * scale) / view.scale;
  view.y = sy - ((sy - view.y) * scale) / view.scale;
  view.scale = scale;
  draw();
}

function draw() {
  drawGeneration++;
  const wereTooMany = outlinesTooMany;
  requestOutlines(); // the tiles of a new view start loading; each draws again when it comes
  if (wereTooMany !== outlinesTooMany) updateStatus();
  const dpr = window.devicePixelRatio || 1;
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.fillStyle = "#0b0f17";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.setTransform(dpr * view.scale, 0, 0, dpr * view.scale, dpr * view.x, dpr * view.y);
  ctx.imageSmoothingEnabled = view.scale < 2;
  ctx.fillStyle = "#1a2130";
  ctx.fillRect(0, 0, width, height);
  if (pyramid) {
    const coarsest = pyramid.levels.length - 1;
    const level = levelForZoom(pyramid);
    drawLevel(pyramid, coarsest);
    if (level !== coarsest) drawLevel(pyramid, level);
    // Past the finest level, once the screen shows more than half the image's resolution: the image's own pixels.
    const finest = pyramid.levels[0]?.factor ?? 1;
    const full = fullLevel && finest > 1 && imagePixelsPerDevicePixel() < Math.min(finest, FULL_RESOLUTION_BELOW) ? fullLevel : null;
    if (full) drawFullResolution(full);
    root.dataset.levelFactor = String(full ? 1 : pyramid.levels[level]?.factor);
  } else if (legacyPreview) ctx.drawImage(legacyPreview, 0, 0, width, height);
  const line = outlineWidth() / view.scale;
  let drawn = 0;
  let highlighted = 0;
  if (showOutlines?.checked && !outlinesTooMany) {
    const alpha = Number(opacity?.value ?? 1);
    for (const entry of outlineTiles.values()) {
      if (!entry.ready) continue;
      // One stroke per tile (two with a range chosen) stays fast with tens of thousands of cells.
      if (highlight) {
        const marked = markedPaths(entry, highlight);
        strokeOutlines(marked.others, "#facc15", alpha * DIMMED, line);
        strokeOutlines(marked.inRange, HIGHLIGHT, alpha, 2 * line);
        highlighted += marked.count;
      } else strokeOutlines(entry.path, "#facc15", alpha, line);
      drawn += entry.cells.length;
    }
    for (const roiIndex of hidden) if (tileOfCell.get(roiIndex)?.ready) drawn--;
    ctx.globalAlpha = 1;
  }
  if (editor) drawn += editor.drawOverlay(ctx, view.scale, outlineWidth());
  if (hovered && !editor?.active) {
    ctx.fillStyle = "rgba(56, 189, 248, 0.35)";
    ctx.fill(hovered.path);
    ctx.strokeStyle = "#38bdf8";
    ctx.lineWidth = (outlineWidth() + 1) / view.scale;
    ctx.stroke(hovered.path);
  }
  canvas.dataset.outlinesDrawn = String(drawn);
  // The highlighted outlines among those drawn (the browser tests read it); absent with no range chosen.
  if (highlight) canvas.dataset.outlinesHighlighted = String(highlighted);
  else delete canvas.dataset.outlinesHighlighted;
  drawScaleBar(dpr);
  root.dataset.view = `${view.scale},${view.x},${view.y}`; // where image pixels are on screen (the browser tests read it)
  const zoomLevel = document.getElementById("zoom-level");
  if (zoomLevel) zoomLevel.textContent = `${Math.round(view.scale * 100)}%`;
}

/**
 * The outlines' width in CSS pixels at the current zoom, the same on screen whatever the image's
 * size: 1.5 where an image pixel covers a screen pixel or more, thicker as the view zooms out (2 at
 * half size, 2.5 at a quarter, 3 at most) so that a thumbnail's outlines still show around dark
 * nuclei; never thinner than 1.5 device pixels.
 */
function outlineWidth() {
  const dpr = window.devicePixelRatio || 1;
  const zoomedOut = view.scale < 1 ? Math.min(1.5, -0.5 * Math.log2(view.scale)) : 0;
  return Math.max(1.5 / dpr, 1.5 + zoomedOut);
}

/**
 * @param {Path2D} path
 * @param {string} colour
 * @param {number} alpha
 * @param {number} width in image pixels
 */
function strokeOutlines(path, colour, alpha, width) {
  ctx.globalAlpha = alpha;
  ctx.strokeStyle = colour;
  ctx.lineWidth = width;
  ctx.stroke(path);
}

/**
 * A tile's outlines split by the chosen range, made once per range (and again after an edit of the tile).
 * @param {OutlineTile} entry
 * @param {CellTest} highlight
 * @returns {Marked}
 */
function markedPaths(entry, highlight) {
  if (entry.marked?.version === highlightVersion) return entry.marked;
  const marked = { version: highlightVersion, inRange: new Path2D(), others: new Path2D(), count: 0 };
  for (const cell of entry.cells) {
    if (hidden.has(cell.props.roi_index)) continue;
    const inRange = highlight(cell.props);
    (inRange ? marked.inRange : marked.others).addPath(cell.path);
    if (inRange) marked.count++;
  }
  entry.marked = marked;
  return marked;
}

/** @param {CellTest | null} test */
function setHighlight(test) {
  highlight = test;
  highlightVersion++;
  updateStatus();
  scheduleDraw();
}

/**
 * A length in µm as people write it: nm below 1 µm, mm from 1000 µm.
 * @param {number} um
 */
function formatLength(um) {
  if (um >= 1000) return `${um / 1000} mm`;
  if (um < 1) return `${Math.round(um * 1000)} nm`;
  return `${um} µm`;
}

/**
 * When the pixel size is known: a bar of a round length (1, 2 or 5 times a power of ten µm) at
 * most 140 screen pixels long, bottom left above the status line, redrawn at every zoom.
 * @param {number} dpr device pixels per CSS pixel
 */
function drawScaleBar(dpr) {
  if (!pixelSizeUm) return;
  const umPerScreenPixel = pixelSizeUm / view.scale;
  const most = 140 * umPerScreenPixel;
  const power = 10 ** Math.floor(Math.log10(most));
  // 1 × power is at most `most` by the choice of power, so one of the three always fits.
  const length = [5, 2, 1].map((m) => m * power).find((v) => v <= most) ?? power;
  const bar = length / umPerScreenPixel;
  const x = 12;
  const y = canvas.clientHeight - 44;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = "rgba(15, 23, 42, 0.7)";
  ctx.fillRect(x - 6, y - 18, bar + 12, 30);
  ctx.fillStyle = "#f8fafc";
  ctx.fillRect(x, y + 4, bar, 4);
  ctx.font = "12px system-ui, sans-serif";
  ctx.textBaseline = "bottom";
  const label = formatLength(Number(length.toPrecision(6)));
  ctx.fillText(label, x, y + 1);
  // For the browser tests: the length shown and its length on screen.
  root.dataset.scaleBar = `${label}|${bar.toFixed(2)}`;
}

/** @type {[string, string, (v: unknown) => string][]} the measurements shown first: key, label, format */
const MEASURES = [
  ["roi_index", "Cell", (v) => `#${v}`],
  ["area_px", "Area", (v) => `${v} px²`],
  ["perimeter_px", "Perimeter", (v) => `${Number(v).toFixed(1)} px`],
  ["centroid_x", "Centroid x", (v) => Number(v).toFixed(1)],
  ["centroid_y", "Centroid y", (v) => Number(v).toFixed(1)],
];
const SKIP = new Set([
  "image_name",
  "image_width",
  "image_height",
  "segmentation_id",
  "segmentation_source",
  "model_name",
  "confluency",
  "roi_id",
  "objectType",
  "cell_type",
  "tags",
  "entity_type",
  "bbox_x",
  "bbox_y",
  "bbox_w",
  "bbox_h",
  "classification",
]);

/** @param {Cell | null} cell */
function showCell(cell) {
  const facts = optionalById("cell-facts", HTMLElement);
  const empty = optionalById("cell-empty", HTMLElement);
  if (!facts || !empty) return; // an image's own page: no cells, no panel
  empty.hidden = Boolean(cell);
  facts.hidden = !cell;
  root.dataset.hoveredCell = cell ? String(cell.props.roi_index) : "";
  if (!cell) return;
  /** @type {[string, string][]} */
  const rows = [];
  const shown = new Set();
  for (const [key, label, format] of MEASURES) {
    if (cell.props[key] === undefined || cell.props[key] === null) continue;
    rows.push([label, format(cell.props[key])]);
    shown.add(key);
  }
  for (const [key, value] of Object.entries(cell.props)) {
    if (shown.has(key) || SKIP.has(key) || value === null || value === "" || typeof value === "object") continue;
    rows.push([key.replaceAll("_", " "), typeof value === "number" && !Number.isInteger(value) ? value.toFixed(3) : String(value)]);
  }
  facts.replaceChildren(
    ...rows.flatMap(([label, value]) => {
      const dt = document.createElement("dt");
      dt.textContent = label;
      const dd = document.createElement("dd");
      dd.textContent = value;
      return [dt, dd];
    }),
  );
}

/** A drag in progress: where the pointer went down, and the view then. @type {{ x: number, y: number, vx: number, vy: number } | null} */
let drag = null;
canvas.addEventListener("pointerdown", (e) => {
  drag = { x: e.clientX, y: e.clientY, vx: view.x, vy: view.y };
  root.classList.add("dragging");
  canvas.setPointerCapture(e.pointerId);
});
canvas.addEventListener("pointerup", (e) => {
  const clicked = drag && Math.hypot(e.clientX - drag.x, e.clientY - drag.y) < 4;
  drag = null;
  root.classList.remove("dragging");
  if (clicked && editor?.active) editor.click(...imagePoint(e));
});
canvas.addEventListener("dblclick", () => editor?.doubleClick());

/**
 * Where a pointer event is, in image pixels.
 * @param {PointerEvent} e
 * @returns {Point}
 */
function imagePoint(e) {
  const rect = canvas.getBoundingClientRect();
  return [(e.clientX - rect.left - view.x) / view.scale, (e.clientY - rect.top - view.y) / view.scale];
}
canvas.addEventListener("pointermove", (e) => {
  if (drag) {
    view.x = drag.vx + e.clientX - drag.x;
    view.y = drag.vy + e.clientY - drag.y;
    draw();
    return;
  }
  const [x, y] = imagePoint(e);
  editor?.pointerAt(x, y);
  if (editor?.active) return; // in edit mode the panel shows the selected cell
  const cell = cellAt(x, y);
  if (cell !== hovered) {
    hovered = cell;
    showCell(cell);
    draw();
  }
});
canvas.addEventListener("pointerleave", () => {
  if (hovered) {
    hovered = null;
    showCell(null);
    draw();
  }
});
canvas.addEventListener(
  "wheel",
  (e) => {
    e.preventDefault();
    const rect = canvas.getBoundingClientRect();
    zoomAt(Math.exp(-e.deltaY * 0.0015), e.clientX - rect.left, e.clientY - rect.top);
  },
  { passive: false },
);
/** @returns {Point} */
const center = () => [canvas.clientWidth / 2, canvas.clientHeight / 2];
byId("zoom-in").addEventListener("click", () => zoomAt(1.5, ...center()));
byId("zoom-out").addEventListener("click", () => zoomAt(1 / 1.5, ...center()));
byId("zoom-fit").addEventListener("click", fitToView);
showOutlines?.addEventListener("change", draw);
opacity?.addEventListener("input", draw);
new ResizeObserver(resize).observe(canvas);

/** @param {number} ms */
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * The image's preview: its tile index, after asking a runner to make it if no one has (the upload
 * page asks at once; an image uploaded through the API is asked for here). Says why when there is none.
 */
async function loadPyramid() {
  /** @type {{ status: string, index?: Pyramid, full?: FullLevel, reason?: string }} the preview's state: none, a job's status, ready or failed */
  let state = await api(`/images/${imageId}/preview`);
  while (state.status === "none") {
    try {
      state = await api(`/images/${imageId}/preview`, { method: "POST" });
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 429) throw error;
      // The organization's other previews are being made (a few at a time): wait for a turn.
      root.dataset.preview = "waiting";
      status.textContent = "Waiting for other previews to be made…";
      await sleep(3000);
    }
  }
  while (state.status === "SUBMITTED" || state.status === "STARTED") {
    root.dataset.preview = "making";
    status.textContent = "Making the preview…";
    await sleep(1000);
    state = await api(`/images/${imageId}/preview`);
  }
  if (state.status === "ready") {
    const ready = state.index ? state : /** @type {typeof state} */ (await api(`/images/${imageId}/preview`));
    const index = ready.index;
    if (!index) throw new Error("the preview is ready but has no tile index");
    pyramid = index;
    fullLevel = ready.full ?? null;
    if (fullLevel) root.dataset.fullResolution = String(fullLevel.blocks.length);
    root.dataset.preview = "ready";
    root.dataset.levels = String(index.levels.length);
    const coarsest = index.levels.length - 1;
    const { columns, rows } = /** @type {PyramidLevel} */ (index.levels[coarsest]);
    for (let row = 0; row < rows; row++) for (let column = 0; column < columns; column++) tile(index, coarsest, column, row);
    return null;
  }
  root.dataset.preview = "failed";
  return `no preview: ${state.reason ?? "it could not be made"}`;
}

/** @returns {Promise<HTMLImageElement | null>} */
function loadLegacyPreview() {
  const image = new Image();
  return new Promise((resolve) => {
    image.onload = () => resolve(image);
    image.onerror = () => resolve(null);
    image.src = `/dashboard/api/segmentation/${id}/preview.png`;
  });
}

/**
 * The part of the image on screen, in image pixels: between the canvas's edges, or the image's own
 * where they lie inside the canvas (zoomed out, or panned past a corner), so that only tiles in view are asked for.
 */
function visibleRegion() {
  const x0 = Math.max(0, -view.x / view.scale);
  const y0 = Math.max(0, -view.y / view.scale);
  const x1 = Math.min(width, (canvas.clientWidth - view.x) / view.scale);
  const y1 = Math.min(height, (canvas.clientHeight - view.y) / view.scale);
  return { x0, y0, x1: Math.max(x0, x1), y1: Math.max(y0, y1) };
}

function rebuildCellIndex() {
  grid.clear();
  tileOfCell.clear();
  for (const entry of outlineTiles.values()) {
    entry.cells.forEach(index);
    for (const cell of entry.cells) tileOfCell.set(cell.props.roi_index, entry);
  }
}

/**
 * One path of a tile's cells, less those deleted in edit mode: only that tile is redrawn after an edit.
 * @param {OutlineTile} entry
 */
function tilePath(entry) {
  const path = new Path2D();
  for (const cell of entry.cells) if (!hidden.has(cell.props.roi_index)) path.addPath(cell.path);
  return path;
}

/**
 * Redraws the tile of a stored cell the editor deleted or brought back (in `hidden`).
 * @param {RoiIndex} roiIndex
 */
function redrawTileOf(roiIndex) {
  const entry = tileOfCell.get(roiIndex);
  if (entry?.ready) {
    entry.path = tilePath(entry);
    entry.marked = null;
  }
  scheduleDraw();
}

/**
 * @param {number} column
 * @param {number} row
 */
async function loadOutlineTile(column, row) {
  /** @type {OutlineTile} */
  const entry = { cells: [], path: new Path2D(), ready: false };
  outlineTiles.set(`${column}/${row}`, entry);
  /** @type {{ features: Feature[] }} */
  let collection;
  try {
    const response = await fetch(`/dashboard/api/segmentation/${id}/outlines/${column}/${row}`);
    if (!response.ok) throw new Error((await response.json().catch(() => null))?.detail ?? `outlines answered ${response.status}`);
    collection = await response.json();
  } catch (error) {
    outlineProblem = error instanceof Error ? error.message : String(error);
    updateStatus();
    return;
  }
  entry.cells = collection.features.map(toCell);
  entry.path = tilePath(entry);
  entry.cells.forEach(index);
  for (const cell of entry.cells) tileOfCell.set(cell.props.roi_index, entry);
  entry.ready = true;
  updateStatus();
  scheduleDraw();
}

/**
 * Asks for the outline tiles in view (and those up to the largest cell's size left and above it,
 * where cells reaching into the view start), forgetting the oldest beyond MAX_OUTLINE_TILES.
 */
function requestOutlines() {
  if (!outlineGrid) return Promise.resolve();
  const region = visibleRegion();
  const inView = outlineGrid.roi_count * (((region.x1 - region.x0) * (region.y1 - region.y0)) / (width * height));
  outlinesTooMany = inView > MAX_CELLS_IN_VIEW;
  if (outlinesTooMany) return Promise.resolve();
  const { tile, columns, rows, max_extent: reach } = outlineGrid;
  const wanted = [];
  const loads = [];
  for (let row = Math.max(0, Math.floor((region.y0 - reach) / tile)); row <= Math.min(rows - 1, Math.floor(region.y1 / tile)); row++) {
    for (let column = Math.max(0, Math.floor((region.x0 - reach) / tile)); column <= Math.min(columns - 1, Math.floor(region.x1 / tile)); column++) {
      const key = `${column}/${row}`;
      wanted.push(key);
      const entry = outlineTiles.get(key);
      if (entry) {
        outlineTiles.delete(key); // most recently used last
        outlineTiles.set(key, entry);
      } else loads.push(loadOutlineTile(column, row));
    }
  }
  let forgotten = false;
  for (const key of outlineTiles.keys()) {
    if (outlineTiles.size <= Math.max(MAX_OUTLINE_TILES, wanted.length)) break;
    if (wanted.includes(key)) continue;
    outlineTiles.delete(key);
    forgotten = true;
  }
  if (forgotten) rebuildCellIndex();
  return Promise.all(loads);
}

function cellsLoaded() {
  let n = 0;
  for (const entry of outlineTiles.values()) n += entry.cells.length;
  return n;
}

function updateStatus() {
  const notes = [];
  if (id && outlineGrid) {
    const loaded = cellsLoaded();
    const total = outlineGrid.roi_count;
    if (loaded === total) notes.push(`${total.toLocaleString("en-US")} outlines`);
    else if (outlinesTooMany)
      notes.push(`${total.toLocaleString("en-US")} cells · zoom in to see their outlines${highlight ? ", those in the plots' range highlighted" : ""}`);
    else notes.push(`${loaded.toLocaleString("en-US")} of ${total.toLocaleString("en-US")} outlines, those near the view`);
    if (outlineProblem) notes.push(outlineProblem);
  } else if (!id) notes.push(`${width.toLocaleString("en-US")} × ${height.toLocaleString("en-US")} px`);
  const corrections = Number(root.dataset.corrections ?? 0);
  if (corrections) notes.push(`${corrections} unsaved correction${corrections === 1 ? "" : "s"}`);
  if (previewNote) notes.push(previewNote);
  root.dataset.outlinesHidden = String(outlinesTooMany);
  status.textContent = notes.join(" · ");
}

async function loadOutlines() {
  /** @type {OutlineGrid} */
  const loaded = await api(`/segmentation/${id}/outlines`);
  outlineGrid = loaded;
  root.dataset.outlineTiles = `${loaded.columns}x${loaded.rows}`;
  await requestOutlines();
  scheduleDraw(); // the outlines need not wait for a preview still being made
}

/** Every outline tile of the segmentation, loaded (saving corrections needs every cell). */
async function loadAllOutlines() {
  if (!outlineGrid) throw new Error("the outlines have not loaded");
  const { rows, columns, roi_count } = outlineGrid;
  const loads = [];
  for (let row = 0; row < rows; row++) {
    for (let column = 0; column < columns; column++) {
      if (!outlineTiles.has(`${column}/${row}`)) loads.push(loadOutlineTile(column, row));
    }
  }
  await Promise.all(loads);
  if (cellsLoaded() !== roi_count) throw new Error(outlineProblem ?? "not every cell could be loaded");
}

/** Why corrections of this segmentation cannot be saved (they are saved as an import), or null. */
function saveProblem() {
  const maxPixels = Number(root.dataset.importMaxPixels);
  const maxCells = Number(root.dataset.importMaxCells);
  if (width * height > maxPixels)
    return `Corrections are saved as an import, which takes images of up to ${maxPixels.toLocaleString("en-US")} pixels; export rois.geojson and correct this one in QuPath.`;
  if (Number(root.dataset.roiCount) > maxCells) return `Corrections are saved as an import, which takes up to ${maxCells.toLocaleString("en-US")} cells.`;
  return null;
}

async function load() {
  fitToView();
  if (id) setUpPlots({ segmentationId: id, setHighlight });
  const [previewProblem] = await Promise.all([loadPyramid(), id ? loadOutlines() : null]);
  if (id) {
    editor = setUpEditing({
      root,
      segmentationId: id,
      imageId,
      roiCount: Number(root.dataset.roiCount),
      saveProblem: saveProblem(),
      hidden,
      redrawTileOf,
      cellAt,
      contains: (cell, x, y) => x >= cell.bbox[0] && x <= cell.bbox[2] && y >= cell.bbox[1] && y <= cell.bbox[3] && contains(cell.ring, x, y),
      cells: () => [...outlineTiles.values()].flatMap((entry) => entry.cells),
      loadAllOutlines,
      showCell,
      scheduleDraw,
      updateStatus,
    });
  }
  if (previewProblem && id) legacyPreview = await loadLegacyPreview();
  if (previewProblem && !legacyPreview) previewNote = previewProblem;
  updateStatus();
  root.dataset.loaded = "true";
  fitToView();
}

/** How often a viewer asks whether its import's intensities are measured yet. */
const MEASUREMENT_POLL_MS = 3000;

/**
 * A saved correction is an import whose intensities a runner measures from the image afterwards:
 * while they are measured, ask every few seconds, and once they are, load the cells again so the
 * cell panel and plots have them without a reload (unless corrections are being made meanwhile:
 * reloading the cells would drop them, so the note says to reload after saving).
 */
async function watchMeasurement() {
  const note = optionalById("intensities-state", HTMLElement);
  if (!id || !note || root.dataset.measurements !== "measuring") return;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, MEASUREMENT_POLL_MS));
    /** @type {{ measurements: { status: string, detail: string | null } }} */
    const record = await api(`/segmentation/${id}`);
    const { status: state, detail } = record.measurements;
    if (state === "measuring") continue;
    root.dataset.measurements = state;
    if (state !== "measured") {
      note.textContent = `not measured: ${detail ?? "the measurement failed"}`;
      return;
    }
    if (Number(root.dataset.corrections ?? 0) > 0) {
      note.textContent = "measured from the image; reload after saving your corrections to see them";
      return;
    }
    outlineTiles.clear();
    rebuildCellIndex();
    await requestOutlines();
    note.textContent = "measured from the image";
    return;
  }
}

load()
  .then(() =>
    watchMeasurement().catch((/** @type {unknown} */ error) => {
      const note = optionalById("intensities-state", HTMLElement);
      if (note) note.textContent = `could not ask whether they are measured: ${error instanceof Error ? error.message : String(error)}; reload to see them`;
    }),
  )
  .catch((/** @type {unknown} */ error) => {
    status.textContent = `Could not load the ${id ? "cells" : "preview"}: ${error instanceof Error ? error.message : String(error)}`;
  });
