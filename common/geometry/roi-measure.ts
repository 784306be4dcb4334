// ROIs and measurements from a raster-ordered label image (labels 1..count, see schema/roi.ts):
// shared by the engine (model segmentations) and the worker (imported annotations), so both measure alike:
// an outline along pixel edges, ImageJ's traced perimeter, pixel-centre centroid and bounding box.
//
// Numeric hot loops: every index is bounded by a loop over the array's own length (or width ×
// height, or a row's samples). The `!`s state that bound to noUncheckedIndexedAccess rather
// than check it again in the inner loop.
import type { Roi } from "../../schema/roi.ts";

/**
 * `holes`: give an object that encloses pixels not its own (background, or objects inside it) an
 * outline that leaves them out (keyholeOutline). The engine's masks have no holes (its clean-up
 * fills them), so it skips the search; annotation import asks for it.
 */
export function measureRois(labels: Uint32Array, width: number, height: number, count: number, options: { holes?: boolean } = {}): Roi[] {
  const area = new Float64Array(count + 1);
  const sumX = new Float64Array(count + 1);
  const sumY = new Float64Array(count + 1);
  const minX = new Int32Array(count + 1).fill(width);
  const maxX = new Int32Array(count + 1).fill(-1);
  const minY = new Int32Array(count + 1).fill(height);
  const maxY = new Int32Array(count + 1).fill(-1);
  const first = new Int32Array(count + 1).fill(-1);
  for (let y = 0, i = 0; y < height; y++) {
    for (let x = 0; x < width; x++, i++) {
      const k = labels[i]!;
      if (k === 0) continue;
      if (k > count) throw new Error(`label ${k} exceeds the mask count ${count}`);
      if (first[k] === -1) first[k] = i;
      area[k]!++;
      sumX[k]! += x;
      sumY[k]! += y;
      if (x < minX[k]!) minX[k] = x;
      if (x > maxX[k]!) maxX[k] = x;
      if (y < minY[k]!) minY[k] = y;
      maxY[k] = y;
    }
  }
  const holeFinder = options.holes ? new HoleFinder(labels, width) : undefined;
  const rois: Roi[] = [];
  for (let k = 1; k <= count; k++) {
    if (area[k] === 0) throw new Error(`label ${k} is empty: labels must be numbered 1..count without gaps`);
    const outer = traceOutline(labels, width, height, k, first[k]!);
    const holes = holeFinder?.holeRings(k, minX[k]!, minY[k]!, maxX[k]!, maxY[k]!);
    const polygon = holes?.length ? keyholeOutline(outer, holes) : outer;
    rois.push({
      index: k - 1,
      polygon,
      area_px: area[k]!,
      // ImageJ measures a shape with holes by all its outlines: the keyhole's seams are not edges.
      perimeter_px: tracedPerimeter(outer) + (holes ?? []).reduce((sum, hole) => sum + tracedPerimeter(hole), 0),
      centroid_x: sumX[k]! / area[k]! + 0.5,
      centroid_y: sumY[k]! / area[k]! + 0.5,
      bbox_x: minX[k]!,
      bbox_y: minY[k]!,
      bbox_w: maxX[k]! - minX[k]! + 1,
      bbox_h: maxY[k]! - minY[k]! + 1,
    });
  }
  return rois;
}

/** Foreground fraction of the image. */
export function confluency(labels: Uint32Array): number {
  let foreground = 0;
  for (let i = 0; i < labels.length; i++) if (labels[i] !== 0) foreground++;
  return labels.length === 0 ? 0 : foreground / labels.length;
}

/**
 * Traces the outer boundary of mask k along pixel edges, starting at the top-left corner of its
 * first pixel and heading right, with the mask on the right-hand side (y down). At each corner the
 * walk turns left if the pixel ahead-left is in the mask (so diagonal neighbours are joined: masks
 * are 8-connected, background 4-connected), goes straight if only the pixel ahead-right is, and
 * turns right otherwise. Vertices are emitted only where the direction changes. The first pixel
 * is topmost-leftmost, so its top-left corner is on the boundary and visited exactly once.
 */
function traceOutline(labels: Uint32Array, width: number, height: number, k: number, firstPixel: number): Int32Array {
  const inside = (x: number, y: number) => x >= 0 && y >= 0 && x < width && y < height && labels[y * width + x] === k;
  return traceRegion(inside, firstPixel % width, Math.floor(firstPixel / width), 8);
}

/**
 * The walk of traceOutline around any region, from its topmost-leftmost pixel (x, y). With
 * connectivity 4 pixels touching only at a corner are not joined (a hole is 4-connected, as the
 * background around an 8-connected object is): ahead-left counts only when ahead-right is inside too.
 */
function traceRegion(inside: (x: number, y: number) => boolean, startX: number, startY: number, connectivity: 4 | 8): Int32Array {
  // The start corner always is a vertex: the walk arrives heading up the first pixel's left edge.
  const vertices: number[] = [startX, startY];
  let cx = startX + 1,
    cy = startY;
  let dx = 1,
    dy = 0; // heading east along the top edge of the first pixel
  while (cx !== startX || cy !== startY) {
    // Left of heading (dx, dy) with y pointing down is (dy, -dx); right is (-dy, dx).
    const aheadLeftX = cx + (dx + dy > 0 ? 0 : -1);
    const aheadLeftY = cy + (dy - dx > 0 ? 0 : -1);
    const aheadRightX = cx + (dx - dy > 0 ? 0 : -1);
    const aheadRightY = cy + (dy + dx > 0 ? 0 : -1);
    const aheadRight = inside(aheadRightX, aheadRightY);
    let ndx: number, ndy: number;
    if (inside(aheadLeftX, aheadLeftY) && (connectivity === 8 || aheadRight)) {
      ndx = dy;
      ndy = -dx;
    } else if (aheadRight) {
      ndx = dx;
      ndy = dy;
    } else {
      ndx = -dy;
      ndy = dx;
    }
    if (ndx !== dx || ndy !== dy) vertices.push(cx, cy);
    dx = ndx;
    dy = ndy;
    cx += dx;
    cy += dy;
  }
  return Int32Array.from(vertices);
}

/**
 * The rings of the regions an object encloses: pixels in its bounding box that are not its own and
 * not 4-connected to the box's border through pixels not its own (the rule of common/geometry/label-holes.ts),
 * one 4-connected region per hole, each traced from its topmost-leftmost pixel. Two Int32Arrays
 * as large as the largest box, reused from object to object: 8 bytes a pixel, like the import's
 * one-piece pass (worker/annotations/limits.ts).
 */
class HoleFinder {
  /** Per box pixel: 0 not yet reached, OUTSIDE (the object's own, or open to the border), else the hole's number. */
  private region = new Int32Array(0);
  private queue = new Int32Array(0);

  private readonly labels: Uint32Array;
  private readonly width: number;

  constructor(labels: Uint32Array, width: number) {
    this.labels = labels;
    this.width = width;
  }

  holeRings(k: number, x0: number, y0: number, x1: number, y1: number): Int32Array[] {
    const w = x1 - x0 + 1,
      h = y1 - y0 + 1;
    if (w < 3 || h < 3) return []; // no room for a hole
    if (this.region.length < w * h) {
      this.region = new Int32Array(w * h);
      this.queue = new Int32Array(w * h);
    }
    const { labels, width, queue } = this;
    const region = this.region.subarray(0, w * h).fill(0);
    const OUTSIDE = -1;
    for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) if (labels[(y0 + y) * width + x0 + x] === k) region[y * w + x] = OUTSIDE;
    /** Marks with `mark` every unreached pixel 4-connected to those queued (queue[0 .. tail)) through unreached pixels. */
    const flood = (tail: number, mark: number) => {
      let head = 0;
      while (head < tail) {
        const j = queue[head++]!;
        const y = Math.floor(j / w),
          x = j - y * w;
        for (const n of [x > 0 ? j - 1 : -1, x < w - 1 ? j + 1 : -1, y > 0 ? j - w : -1, y < h - 1 ? j + w : -1]) {
          if (n >= 0 && region[n] === 0) {
            region[n] = mark;
            queue[tail++] = n;
          }
        }
      }
    };
    let tail = 0;
    const seed = (j: number) => {
      if (region[j] === 0) {
        region[j] = OUTSIDE;
        queue[tail++] = j;
      }
    };
    for (let x = 0; x < w; x++) {
      seed(x);
      seed((h - 1) * w + x);
    }
    for (let y = 1; y < h - 1; y++) {
      seed(y * w);
      seed(y * w + w - 1);
    }
    flood(tail, OUTSIDE);
    const rings: Int32Array[] = [];
    // Raster order: each hole is first met at its topmost-leftmost pixel, where its ring starts.
    for (let j = 0; j < w * h; j++) {
      if (region[j] !== 0) continue;
      const id = rings.length + 1;
      region[j] = id;
      queue[0] = j;
      flood(1, id);
      const inHole = (x: number, y: number) => x >= x0 && x <= x1 && y >= y0 && y <= y1 && region[(y - y0) * w + x - x0] === id;
      rings.push(traceRegion(inHole, x0 + (j % w), y0 + Math.floor(j / w), 4));
    }
    return rings;
  }
}

/**
 * One outline for an object with holes: the outer ring, then for each hole a seam from the outer
 * ring's first vertex along the bounding box's top edge and straight down to the hole's first
 * vertex, the hole's ring backwards, and the same seam back. Filled by the even-odd rule
 * (ScanPolygon, ImageJ's PolygonFiller) a seam covers no pixel centre, since it is walked both
 * ways, so the outline fills exactly the object's pixels, and its shoelace area is their count.
 */
function keyholeOutline(outer: Int32Array, holes: Int32Array[]): Int32Array {
  const sx = outer[0]!,
    sy = outer[1]!;
  const vertices: number[] = Array.from(outer);
  const add = (x: number, y: number) => {
    const n = vertices.length;
    if (vertices[n - 2] !== x || vertices[n - 1] !== y) vertices.push(x, y);
  };
  for (const hole of holes) {
    const hx = hole[0]!,
      hy = hole[1]!;
    add(sx, sy);
    add(hx, sy);
    add(hx, hy);
    for (let v = hole.length / 2 - 1; v >= 1; v--) add(hole[2 * v]!, hole[2 * v + 1]!);
    add(hx, hy);
    add(hx, sy);
  }
  if (vertices.at(-2) === sx && vertices.at(-1) === sy) vertices.length -= 2;
  return Int32Array.from(vertices);
}

// Exported for its tests only (test/engine/rois.test.ts, test/worker/pixel-size.test.ts).
/** ImageJ's PolygonRoi.getTracedPerimeter: edge length minus (2 - √2) per non-adjacent corner. */
export function tracedPerimeter(polygon: Int32Array): number {
  const { sumdx, sumdy, corners } = tracedPerimeterParts(polygon);
  return sumdx + sumdy - corners * (2 - Math.SQRT2);
}

/**
 * The sums ImageJ's traced perimeter is made of: horizontal and vertical edge length, and the
 * corners it cuts. With a pixel of w × h ImageJ's perimeter is sumdx·w + sumdy·h − corners·(w + h − √(w² + h²)).
 */
export function tracedPerimeterParts(polygon: Int32Array): { sumdx: number; sumdy: number; corners: number } {
  const n = polygon.length / 2;
  if (n < 4) return { sumdx: 0, sumdy: 0, corners: 0 };
  let sumdx = 0,
    sumdy = 0,
    corners = 0;
  let dx1 = polygon[0]! - polygon[2 * (n - 1)]!;
  let dy1 = polygon[1]! - polygon[2 * (n - 1) + 1]!;
  let side1 = Math.abs(dx1) + Math.abs(dy1);
  let corner = false;
  for (let i = 0; i < n; i++) {
    const next = (i + 1) % n;
    const dx2 = polygon[2 * next]! - polygon[2 * i]!;
    const dy2 = polygon[2 * next + 1]! - polygon[2 * i + 1]!;
    sumdx += Math.abs(dx1);
    sumdy += Math.abs(dy1);
    const side2 = Math.abs(dx2) + Math.abs(dy2);
    if (side1 > 1 || !corner) {
      corner = true;
      corners++;
    } else corner = false;
    dx1 = dx2;
    dy1 = dy2;
    side1 = side2;
  }
  return { sumdx, sumdy, corners };
}
