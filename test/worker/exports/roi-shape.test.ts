// The shape columns' geometry (common/geometry/roi-shape.ts) on the fixture's outlines, against sums over
// the objects' pixels, brute force over their corners, and scikit-image's regionprops on the same
// labels (test/reference/regionprops.json, made by test/reference/regionprops.py).
import { describe, expect, it } from "vitest";
import { measureRois } from "../../../common/geometry/roi-measure.ts";
import { circularity, convexHull, equivalentDiameter, maxFeretDiameter, momentEllipse, pixelMoments, RoiShape } from "../../../common/geometry/roi-shape.ts";
import type { Roi } from "../../../schema/roi.ts";
import { fixtureLabels } from "../../reference/measure-fixture.ts";
import reference from "../../reference/regionprops.json";
import { containsPoint } from "./helpers/polygons.ts";

const fixture = fixtureLabels();
const rois = measureRois(fixture.labels, fixture.width, fixture.height, fixture.count, { holes: true });

/** Sums over the pixels of label k, straight from the label image. */
function labelSums(k: number, ox: number, oy: number) {
  const s = { m00: 0, m10: 0, m01: 0, m20: 0, m11: 0, m02: 0 };
  for (let y = 0; y < fixture.height; y++)
    for (let x = 0; x < fixture.width; x++) {
      if (fixture.labels[y * fixture.width + x] !== k) continue;
      const u = x - ox,
        v = y - oy;
      s.m00++;
      s.m10 += u;
      s.m01 += v;
      s.m20 += u * u;
      s.m11 += u * v;
      s.m02 += v * v;
    }
  return s;
}

function corners(roi: Roi): [number, number][] {
  const points: [number, number][] = [];
  for (let i = 0; i < roi.polygon.length; i += 2) points.push([roi.polygon[i]!, roi.polygon[i + 1]!]);
  return points;
}

function bruteForceFeret(points: [number, number][], sx = 1, sy = 1): number {
  let best = 0;
  for (const [ax, ay] of points) for (const [bx, by] of points) best = Math.max(best, ((ax - bx) * sx) ** 2 + ((ay - by) * sy) ** 2);
  return Math.sqrt(best);
}

function relative(actual: number, expected: number): number {
  return expected === 0 ? Math.abs(actual) : Math.abs(actual - expected) / Math.abs(expected);
}

describe("shape measurements from the stored outline", () => {
  it("holds objects of every kind: the fixture has 20, one of them with a hole", () => {
    expect(rois).toHaveLength(20);
    expect(reference.regions).toHaveLength(20);
    // The ring's outline is a keyhole: outer ring, seam, the hole's ring.
    expect(rois.some((r) => r.area_px < r.bbox_w * r.bbox_h && r.polygon.length > 40)).toBe(true);
  });

  it("sums the pixels of each outline's even-odd interior exactly, holes left out", () => {
    for (const roi of rois) {
      expect(pixelMoments(roi.polygon, roi.bbox_x, roi.bbox_y), `ROI ${roi.index}`).toEqual(labelSums(roi.index + 1, roi.bbox_x, roi.bbox_y));
    }
  });

  it("sums the pixel centres inside a polygon with slanted edges by the same filling rule", () => {
    const triangle = new Int32Array([2, 1, 14, 4, 5, 12]);
    const expected = { m00: 0, m10: 0, m01: 0, m20: 0, m11: 0, m02: 0 };
    for (let y = 0; y < 14; y++)
      for (let x = 0; x < 16; x++) {
        if (!containsPoint(triangle, x + 0.5, y + 0.5)) continue;
        const u = x - 2,
          v = y - 1;
        expected.m00++;
        expected.m10 += u;
        expected.m01 += v;
        expected.m20 += u * u;
        expected.m11 += u * v;
        expected.m02 += v * v;
      }
    expect(expected.m00).toBeGreaterThan(30);
    expect(pixelMoments(triangle, 2, 1)).toEqual(expected);
  });

  it("matches regionprops' area, centroid, central moments, ellipse axes and eccentricity (to 1e-9 relative)", () => {
    for (const ref of reference.regions) {
      const roi = rois[ref.label - 1]!;
      const where = `label ${ref.label}`;
      expect(roi.area_px, where).toBe(ref.area);
      expect(relative(roi.centroid_x, ref.centroid_x), where).toBeLessThan(1e-12);
      expect(relative(roi.centroid_y, ref.centroid_y), where).toBeLessThan(1e-12);
      const m = pixelMoments(roi.polygon, roi.bbox_x, roi.bbox_y);
      expect(m.m20 - (m.m10 * m.m10) / m.m00, where).toBeCloseTo(ref.mu20, 9);
      expect(m.m11 - (m.m10 * m.m01) / m.m00, where).toBeCloseTo(ref.mu11, 9);
      expect(m.m02 - (m.m01 * m.m01) / m.m00, where).toBeCloseTo(ref.mu02, 9);
      const ellipse = momentEllipse(m);
      expect(relative(ellipse.majorAxis, ref.axis_major_length), where).toBeLessThan(1e-9);
      // One pixel wide: λ2 is 0, which regionprops' eigen solver gives as a rounding residue.
      expect(Math.abs(ellipse.minorAxis - ref.axis_minor_length), where).toBeLessThan(1e-6);
      expect(Math.abs(ellipse.eccentricity - ref.eccentricity), where).toBeLessThan(1e-9);
      expect(relative(equivalentDiameter(roi.area_px), ref.equivalent_diameter_area), where).toBeLessThan(1e-12);
    }
  });

  it("gives the major axis's angle as ImageJ does, which is regionprops' orientation turned: (90° + φ) mod 180°", () => {
    let compared = 0;
    for (const ref of reference.regions) {
      if (ref.mu20 === ref.mu02 && ref.mu11 === 0) continue; // round or square: no axis (ImageJ says 0, regionprops π/4)
      const roi = rois[ref.label - 1]!;
      const angle = momentEllipse(pixelMoments(roi.polygon, roi.bbox_x, roi.bbox_y)).orientationDeg;
      // With equal variances scikit-image 0.19 answers ±π/4 with the sign the wrong way round
      // (scikit-image issue #6815, fixed in 0.21 by pull request #6836): the fixed value is the opposite.
      const phi = ref.mu20 === ref.mu02 ? -ref.orientation : ref.orientation;
      const turned = (((90 + (phi * 180) / Math.PI) % 180) + 180) % 180;
      const difference = Math.abs(angle - turned);
      expect(Math.min(difference, 180 - difference), `label ${ref.label}`).toBeLessThan(1e-9);
      compared++;
    }
    expect(compared).toBe(16); // all but the disc, the ring, the pixel and the 2 x 2 square
  });

  it("reads the painted ellipses' angles back: 30° and 135° counter-clockwise on screen, 90° upright, 0° for a disc and a horizontal line", () => {
    const angleAt = (x: number, y: number) => {
      const roi = rois[fixture.labels[y * fixture.width + x]! - 1]!;
      return new RoiShape(roi).ellipse().orientationDeg;
    };
    expect(angleAt(16, 12)).toBeCloseTo(30, 0);
    expect(angleAt(72, 14)).toBeCloseTo(135, 0);
    expect(angleAt(100, 12)).toBeCloseTo(90, 6);
    expect(angleAt(45, 12)).toBe(0);
    expect(angleAt(55, 32)).toBe(0);
    expect(angleAt(52, 40)).toBe(90);
    expect(angleAt(60, 40)).toBeCloseTo(135, 6); // the staircase runs down-right on screen
  });

  it("finds the convex hull of the outline's corners: convex, counter-clockwise, made of corners, holding every corner", () => {
    for (const roi of rois) {
      const hull = Array.from(convexHull(roi.polygon, roi.bbox_x, roi.bbox_y));
      const n = hull.length / 2;
      const points = corners(roi).map(([x, y]) => [x - roi.bbox_x, y - roi.bbox_y] as [number, number]);
      expect(n, `ROI ${roi.index}`).toBeGreaterThanOrEqual(3);
      for (let i = 0; i < n; i++) {
        const [ax, ay, bx, by] = [hull[2 * i]!, hull[2 * i + 1]!, hull[(2 * i + 2) % hull.length]!, hull[(2 * i + 3) % hull.length]!];
        expect(points.some(([x, y]) => x === ax && y === ay)).toBe(true);
        // Every corner lies on or to the left of each edge; the next hull vertex strictly so.
        for (const [x, y] of points) expect((bx - ax) * (y - ay) - (by - ay) * (x - ax)).toBeGreaterThanOrEqual(0);
        const [cx, cy] = [hull[(2 * i + 4) % hull.length]!, hull[(2 * i + 5) % hull.length]!];
        expect((bx - ax) * (cy - ay) - (by - ay) * (cx - ax)).toBeGreaterThan(0);
      }
    }
  });

  it("measures the maximum Feret diameter by rotating calipers as brute force over every pair of corners does, with square or oblong pixels", () => {
    for (const roi of rois) {
      const shape = new RoiShape(roi);
      expect(shape.feretMax(), `ROI ${roi.index}`).toBe(bruteForceFeret(corners(roi)));
      expect(relative(shape.feretMax(0.5, 1.25), bruteForceFeret(corners(roi), 0.5, 1.25)), `ROI ${roi.index}`).toBeLessThan(1e-12);
    }
    // On random convex polygons too: many hull vertices, antipodal pairs on every side.
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 1000;
    for (let trial = 0; trial < 50; trial++) {
      const cloud = Int32Array.from({ length: 80 }, () => Math.floor(random()));
      const hull = convexHull(cloud, 0, 0).slice();
      const points: [number, number][] = [];
      for (let i = 0; i < cloud.length; i += 2) points.push([cloud[i]!, cloud[i + 1]!]);
      expect(maxFeretDiameter(hull)).toBe(bruteForceFeret(points));
    }
  });

  it("knows the simple cases: one pixel, a line, a rectangle", () => {
    const rectangle = (w: number, h: number): Roi => ({
      index: 0,
      polygon: new Int32Array([10, 20, 10 + w, 20, 10 + w, 20 + h, 10, 20 + h]),
      area_px: w * h,
      perimeter_px: 2 * (w + h),
      centroid_x: 10 + w / 2,
      centroid_y: 20 + h / 2,
      bbox_x: 10,
      bbox_y: 20,
      bbox_w: w,
      bbox_h: h,
    });
    const pixel = new RoiShape(rectangle(1, 1));
    expect([pixel.hullArea(), pixel.feretMax(), pixel.ellipse().majorAxis, pixel.ellipse().eccentricity]).toEqual([1, Math.SQRT2, 0, 0]);
    const line = new RoiShape(rectangle(12, 1));
    expect(line.ellipse().eccentricity).toBe(1);
    expect(line.ellipse().minorAxis).toBe(0);
    // A line of n pixel centres 1 apart has variance (n² − 1)/12.
    expect(line.ellipse().majorAxis).toBeCloseTo(4 * Math.sqrt((144 - 1) / 12), 12);
    const box = new RoiShape(rectangle(6, 8));
    expect([box.hullArea(), box.feretMax()]).toEqual([48, 10]);
    expect(box.hullArea(0.5, 0.25)).toBe(6);
    expect(box.feretMax(0.5, 0.25)).toBeCloseTo(Math.hypot(3, 2), 12);
  });

  it("caps circularity at 1 as ImageJ does, and gives the equivalent diameter of a circle's area", () => {
    expect(circularity(1, 4 - 2 * (2 - Math.SQRT2))).toBe(1);
    expect(circularity(100, 40)).toBeCloseTo(Math.PI / 4, 12);
    expect(circularity(5, 0)).toBe(0);
    expect(equivalentDiameter(Math.PI * 25)).toBeCloseTo(10, 12);
  });

  it("scales moments for oblong pixels as regionprops does with spacing: the covariance of scaled centres", () => {
    const roi = rois[2]!;
    const m = pixelMoments(roi.polygon, roi.bbox_x, roi.bbox_y);
    const [sx, sy] = [0.3, 0.7];
    // The ellipse of the scaled pixel centres, computed directly.
    let n = 0,
      mx = 0,
      my = 0;
    const points: [number, number][] = [];
    for (let i = 0; i < fixture.labels.length; i++)
      if (fixture.labels[i] === roi.index + 1) points.push([(i % fixture.width) * sx, Math.floor(i / fixture.width) * sy]);
    for (const [x, y] of points) {
      n++;
      mx += x;
      my += y;
    }
    mx /= n;
    my /= n;
    let cxx = 0,
      cyy = 0,
      cxy = 0;
    for (const [x, y] of points) {
      cxx += (x - mx) ** 2 / n;
      cyy += (y - my) ** 2 / n;
      cxy += ((x - mx) * (y - my)) / n;
    }
    const l1 = (cxx + cyy) / 2 + Math.hypot((cxx - cyy) / 2, cxy);
    const l2 = (cxx + cyy) / 2 - Math.hypot((cxx - cyy) / 2, cxy);
    const scaled = momentEllipse(m, sx, sy);
    expect(relative(scaled.majorAxis, 4 * Math.sqrt(l1))).toBeLessThan(1e-9);
    expect(relative(scaled.minorAxis, 4 * Math.sqrt(l2))).toBeLessThan(1e-9);
  });
});
