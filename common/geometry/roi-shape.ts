// Shape measurements of one ROI from its stored outline alone (schema/roi.ts: integer pixel
// corners whose even-odd interior is exactly the object's pixels), computed when an export asks
// for them, so no artifact needs to store them and every segmentation, old or new, has them.
//
// Definitions, and whom each follows where ImageJ and scikit-image differ (the columns in
// schema/measurements.ts repeat this for users):
// - Second moments of the object's pixels (each pixel one point at its centre), as
//   skimage.measure.regionprops computes them (moments_central, inertia_tensor_eigvals): the
//   ellipse with the same second moments has axes 4·√λ1 and 4·√λ2 (λ the covariance matrix's
//   eigenvalues), eccentricity √(1 − λ2/λ1). ImageJ's Fit Ellipse uses the same moments plus 1/12
//   per axis (a pixel as a unit square) and then scales both axes so that the ellipse's area is the
//   pixel count; we follow regionprops for the lengths. The orientation is the same axis in both;
//   we give it as ImageJ's "Angle": degrees in [0, 180), counter-clockwise from the image's x axis as
//   seen on screen (y pointing down). regionprops' `orientation` φ (radians from the row axis) is
//   the same axis: angle = (90 + φ·180/π) mod 180.
// - Convex hull of the outline's corners (Andrew's monotone chain: A. M. Andrew, "Another efficient
//   algorithm for convex hulls in two dimensions", Information Processing Letters 9(5), 1979), as
//   ImageJ's Roi.getConvexHull on a traced ROI. Solidity is the pixel count over that hull's
//   area (ImageJ's Solidity); regionprops divides by the pixel count of its convex hull image instead.
// - Maximum Feret diameter: the largest distance between two corners of the outline, found over the
//   hull's antipodal pairs by rotating calipers (M. I. Shamos, "Computational Geometry", PhD thesis,
//   Yale 1978; G. Toussaint, "Solving geometric problems with the rotating calipers", MELECON 1983),
//   as ImageJ's Feret on a traced ROI. regionprops' feret_diameter_max measures a marching-squares
//   contour of its convex hull image (through pixel edges' midpoints), a little shorter.
// - Circularity 4π·area/perimeter² with ImageJ's traced perimeter (perimeter_px) and, as ImageJ,
//   capped at 1 (small objects' traced perimeter is short enough to pass it).
// - Equivalent diameter √(4·area/π), the same in both.
//
// Pixel size: lengths come in pixels, or in physical units for a pixel of sx × sy (µm); with
// anisotropic pixels the moments and the hull are scaled before the axes and the Feret diameter
// are taken, as regionprops does with `spacing`.
//
// Numeric hot loops: every index is bounded by a loop over the array's own length (or width ×
// height, or a row's samples). The `!`s state that bound to noUncheckedIndexedAccess rather
// than check it again in the inner loop.

import type { Roi } from "../../schema/roi.ts";

/**
 * Sums over the object's pixels of 1, x, y, x², xy, y², with (x, y) the pixel's column and row
 * relative to an origin (the bounding box's corner, which keeps the sums small and, for objects of
 * up to tens of millions of pixels, exact integers).
 */
interface PixelMoments {
  m00: number;
  m10: number;
  m01: number;
  m20: number;
  m11: number;
  m02: number;
}

/** Σ_{u=0}^{n-1} u and Σ u². */
const sum1 = (n: number) => (n * (n - 1)) / 2;
const sum2 = (n: number) => ((n - 1) * n * (2 * n - 1)) / 6;

// Exported for its test only (test/worker/exports/roi-shape.test.ts).
/**
 * The pixel moments of the even-odd interior of `polygon` (pixel centres inside), relative to
 * (ox, oy). An outline along pixel edges, the engine's and the import's, takes the exact path:
 * by Green's theorem on the grid, each vertical edge at column boundary U spanning rows [a, b)
 * adds (or, walked the other way, removes) the pixels left of it on those rows, Σ_{u<U} over the
 * rows, in closed form; horizontal edges add nothing. The orientation is found from the sign of
 * the count. An outline with any slanted edge is scanned row by row instead (generalPixelMoments).
 */
export function pixelMoments(polygon: Int32Array, ox: number, oy: number): PixelMoments {
  const n = polygon.length / 2;
  let m00 = 0,
    m10 = 0,
    m01 = 0,
    m20 = 0,
    m11 = 0,
    m02 = 0;
  for (let i = 0; i < n; i++) {
    const j = i + 1 === n ? 0 : i + 1;
    const ux = polygon[2 * i]! - ox,
      ua = polygon[2 * i + 1]! - oy,
      vx = polygon[2 * j]! - ox,
      vb = polygon[2 * j + 1]! - oy;
    if (ua === vb) continue; // horizontal
    if (ux !== vx) return generalPixelMoments(polygon, ox, oy);
    const sign = vb > ua ? 1 : -1;
    const a = Math.min(ua, vb),
      b = Math.max(ua, vb);
    const rows = b - a;
    const rowSum = sum1(b) - sum1(a);
    const rowSquares = sum2(b) - sum2(a);
    const s0 = ux,
      s1 = sum1(ux),
      s2 = sum2(ux);
    m00 += sign * s0 * rows;
    m10 += sign * s1 * rows;
    m01 += sign * s0 * rowSum;
    m20 += sign * s2 * rows;
    m11 += sign * s1 * rowSum;
    m02 += sign * s0 * rowSquares;
  }
  if (m00 < 0) return { m00: -m00, m10: -m10, m01: -m01, m20: -m20, m11: -m11, m02: -m02 };
  return { m00, m10, m01, m20, m11, m02 };
}

/**
 * The same sums for any polygon, row by row: pixel u of row v is inside when its centre
 * (u + 0.5, v + 0.5) lies in [x_k, x_k+1) of the sorted crossings of the row's centre line, the
 * filling rule of common/geometry/roi-raster.ts (ScanPolygon).
 */
function generalPixelMoments(polygon: Int32Array, ox: number, oy: number): PixelMoments {
  const n = polygon.length / 2;
  let minY = Infinity,
    maxY = -Infinity;
  for (let i = 0; i < n; i++) {
    minY = Math.min(minY, polygon[2 * i + 1]! - oy);
    maxY = Math.max(maxY, polygon[2 * i + 1]! - oy);
  }
  const moments = { m00: 0, m10: 0, m01: 0, m20: 0, m11: 0, m02: 0 };
  const xs: number[] = [];
  for (let v = minY; v < maxY; v++) {
    const centre = v + 0.5;
    xs.length = 0;
    for (let i = 0; i < n; i++) {
      const j = i + 1 === n ? 0 : i + 1;
      const x0 = polygon[2 * i]! - ox,
        y0 = polygon[2 * i + 1]! - oy,
        x1 = polygon[2 * j]! - ox,
        y1 = polygon[2 * j + 1]! - oy;
      if (y0 === y1 || centre < Math.min(y0, y1) || centre >= Math.max(y0, y1)) continue;
      xs.push(x0 + ((centre - y0) * (x1 - x0)) / (y1 - y0));
    }
    xs.sort((p, q) => p - q);
    for (let k = 0; k + 1 < xs.length; k += 2) {
      const from = Math.ceil(xs[k]! - 0.5),
        to = Math.ceil(xs[k + 1]! - 0.5);
      if (to <= from) continue;
      const count = to - from,
        s1 = sum1(to) - sum1(from),
        s2 = sum2(to) - sum2(from);
      moments.m00 += count;
      moments.m10 += s1;
      moments.m01 += count * v;
      moments.m20 += s2;
      moments.m11 += s1 * v;
      moments.m02 += count * v * v;
    }
  }
  return moments;
}

/** The ellipse with the object's second moments, in the units of a pixel of sx × sy. */
interface Ellipse {
  majorAxis: number;
  minorAxis: number;
  eccentricity: number;
  /** Degrees in [0, 180), counter-clockwise from the x axis as seen on screen (ImageJ's Angle). */
  orientationDeg: number;
}

// Exported for its test only (test/worker/exports/roi-shape.test.ts).
export function momentEllipse(m: PixelMoments, sx = 1, sy = 1): Ellipse {
  if (m.m00 === 0) return { majorAxis: 0, minorAxis: 0, eccentricity: 0, orientationDeg: 0 };
  const xBar = m.m10 / m.m00,
    yBar = m.m01 / m.m00;
  // Covariance of the pixel centres (regionprops: moments_central / m00), scaled to the pixel size.
  const cxx = ((m.m20 - xBar * m.m10) / m.m00) * sx * sx;
  const cyy = ((m.m02 - yBar * m.m01) / m.m00) * sy * sy;
  const cxy = ((m.m11 - xBar * m.m01) / m.m00) * sx * sy;
  const half = (cxx + cyy) / 2;
  const spread = Math.hypot((cxx - cyy) / 2, cxy);
  const l1 = half + spread;
  // The smaller eigenvalue as det / λ1, which keeps its precision for thin objects.
  const l2 = l1 > 0 ? Math.max(0, (cxx * cyy - cxy * cxy) / l1) : 0;
  // The major axis's angle, with y flipped so that it reads counter-clockwise on screen.
  let orientationDeg = spread === 0 ? 0 : (0.5 * Math.atan2(-2 * cxy, cxx - cyy) * 180) / Math.PI;
  if (orientationDeg <= 0) orientationDeg += 180; // -0 too, so that a horizontal axis reads 0, not -0
  if (orientationDeg >= 180) orientationDeg -= 180;
  return {
    majorAxis: 4 * Math.sqrt(l1),
    minorAxis: 4 * Math.sqrt(l2),
    eccentricity: l1 > 0 ? Math.sqrt(Math.max(0, 1 - l2 / l1)) : 0,
    orientationDeg,
  };
}

/** Scratch for the hull: each row's leftmost and rightmost corner, the points in order, the hull. */
let rowMin = new Int32Array(256);
let rowMax = new Int32Array(256);
let sortedX = new Int32Array(256);
let sortedY = new Int32Array(256);
let hull = new Int32Array(512);

// Exported for its test only (test/worker/exports/roi-shape.test.ts).
/**
 * The convex hull of the polygon's vertices by Andrew's monotone chain, with the points taken in
 * order of y, then x descending (the monotone chain along the y axis: the usual x-major algorithm
 * turned by 90°, which keeps orientation, so its left turns are still counter-clockwise). A corner
 * with another one left and right of it on its row lies between them and is no hull vertex, so only
 * each row's leftmost and rightmost corner are kept, and they come in order by a pass over the rows:
 * no sort. Returns the hull's vertices, counter-clockwise in the (x, y) frame as numbers, without
 * collinear or repeated points, as interleaved coordinates relative to (ox, oy). The returned array
 * is reused by the next call.
 */
export function convexHull(polygon: Int32Array, ox: number, oy: number): Int32Array {
  const n = polygon.length / 2;
  let top = Infinity,
    bottom = -Infinity;
  for (let i = 0; i < n; i++) {
    const v = polygon[2 * i + 1]! - oy;
    if (v < top) top = v;
    if (v > bottom) bottom = v;
  }
  const rows = bottom - top + 1;
  if (rowMin.length < rows) {
    rowMin = new Int32Array(2 * rows);
    rowMax = new Int32Array(2 * rows);
  }
  if (sortedX.length < 2 * rows) {
    sortedX = new Int32Array(4 * rows);
    sortedY = new Int32Array(4 * rows);
    hull = new Int32Array(8 * rows + 4);
  }
  rowMin.fill(0x7fffffff, 0, rows);
  rowMax.fill(-1, 0, rows);
  for (let i = 0; i < n; i++) {
    const u = polygon[2 * i]! - ox,
      r = polygon[2 * i + 1]! - oy - top;
    if (u < rowMin[r]!) rowMin[r] = u;
    if (u > rowMax[r]!) rowMax[r] = u;
  }
  let count = 0;
  for (let r = 0; r < rows; r++) {
    if (rowMax[r]! < 0) continue;
    sortedX[count] = rowMax[r]!;
    sortedY[count++] = top + r;
    if (rowMin[r]! !== rowMax[r]!) {
      sortedX[count] = rowMin[r]!;
      sortedY[count++] = top + r;
    }
  }
  // Lower chain left to right, then upper chain right to left, popping while the last two points
  // and the next one do not turn left (cross product <= 0: a right turn, collinear, or repeated).
  let h = 0;
  for (let pass = 0; pass < 2; pass++) {
    const floor = pass === 0 ? 0 : h - 1;
    for (let step = 0; step < (pass === 0 ? count : count - 1); step++) {
      const k = pass === 0 ? step : count - 2 - step;
      const x = sortedX[k]!,
        y = sortedY[k]!;
      while (h >= floor + 2) {
        const ax = hull[2 * h - 4]!,
          ay = hull[2 * h - 3]!,
          bx = hull[2 * h - 2]!,
          by = hull[2 * h - 1]!;
        if ((bx - ax) * (y - ay) - (by - ay) * (x - ax) > 0) break;
        h--;
      }
      hull[2 * h] = x;
      hull[2 * h + 1] = y;
      h++;
    }
  }
  // The upper chain ends on the first point again.
  return hull.subarray(0, 2 * Math.max(1, h - 1));
}

/** The area of a simple polygon (the hull) by the shoelace formula, for a pixel of sx × sy. */
function polygonArea(ring: Int32Array, sx = 1, sy = 1): number {
  let sum = 0;
  const n = ring.length;
  for (let i = 0; i < n; i += 2) {
    const j = i + 2 === n ? 0 : i + 2;
    sum += ring[i]! * ring[j + 1]! - ring[j]! * ring[i + 1]!;
  }
  return (Math.abs(sum) / 2) * sx * sy;
}

// Exported for its test only (test/worker/exports/roi-shape.test.ts).
/**
 * The largest distance between two vertices of a convex polygon given counter-clockwise (as
 * convexHull returns it), its points scaled by (sx, sy) first (an affine map keeps a hull convex
 * and its order), by rotating calipers: for each edge, the vertex farthest from its line is found
 * by advancing a second pointer that only moves forward; the diameter is among those antipodal pairs.
 */
export function maxFeretDiameter(ring: Int32Array, sx = 1, sy = 1): number {
  const n = ring.length / 2;
  if (feretX.length < n) {
    feretX = new Float64Array(2 * n);
    feretY = new Float64Array(2 * n);
  }
  const x = feretX,
    y = feretY;
  for (let k = 0; k < n; k++) {
    x[k] = ring[2 * k]! * sx;
    y[k] = ring[2 * k + 1]! * sy;
  }
  if (n === 1) return 0;
  if (n === 2) return Math.hypot(x[0]! - x[1]!, y[0]! - y[1]!);
  let best = 0;
  let j = 1;
  for (let i = 0; i < n; i++) {
    const i1 = i + 1 === n ? 0 : i + 1;
    const ex = x[i1]! - x[i]!,
      ey = y[i1]! - y[i]!;
    // Twice the area of the triangle (i, i + 1, k): the distance of k from the edge's line, scaled.
    for (;;) {
      const j1 = j + 1 === n ? 0 : j + 1;
      const here = Math.abs(ex * (y[j]! - y[i]!) - ey * (x[j]! - x[i]!));
      const next = Math.abs(ex * (y[j1]! - y[i]!) - ey * (x[j1]! - x[i]!));
      if (next <= here) break;
      j = j1;
    }
    const d1 = (x[i]! - x[j]!) ** 2 + (y[i]! - y[j]!) ** 2;
    const d2 = (x[i1]! - x[j]!) ** 2 + (y[i1]! - y[j]!) ** 2;
    if (d1 > best) best = d1;
    if (d2 > best) best = d2;
  }
  return Math.sqrt(best);
}

/** Scratch for the Feret diameter's scaled hull. */
let feretX = new Float64Array(64);
let feretY = new Float64Array(64);

/** ImageJ's circularity, 4π·area/perimeter², capped at 1 as ImageJ caps it. */
export function circularity(area: number, perimeter: number): number {
  return perimeter === 0 ? 0 : Math.min(1, (4 * Math.PI * area) / (perimeter * perimeter));
}

/** The diameter of the circle of the same area. */
export function equivalentDiameter(area: number): number {
  return Math.sqrt((4 * area) / Math.PI);
}

/** Everything the shape columns take from one ROI's outline, computed once per ROI and export. */
export class RoiShape {
  readonly moments: PixelMoments;
  /** Hull vertices relative to the bounding box's corner (a copy: convexHull's array is reused). */
  readonly hull: Int32Array;

  constructor(roi: Roi) {
    this.moments = pixelMoments(roi.polygon, roi.bbox_x, roi.bbox_y);
    this.hull = convexHull(roi.polygon, roi.bbox_x, roi.bbox_y).slice();
  }

  ellipse(sx = 1, sy = 1): Ellipse {
    return momentEllipse(this.moments, sx, sy);
  }

  hullArea(sx = 1, sy = 1): number {
    return polygonArea(this.hull, sx, sy);
  }

  feretMax(sx = 1, sy = 1): number {
    return maxFeretDiameter(this.hull, sx, sy);
  }
}
