// Outline-based annotations (ImageJ ROIs, GeoJSON) become a label image here. Each parser hands
// its objects to an OutlineCollector, which enforces the limits as they arrive and fills each one
// at once with the project's one filling rule (common/geometry/roi-raster.ts ScanPolygon: a pixel belongs
// to an object when its centre lies inside by the even-odd rule, so inner rings are holes); no
// outline is kept, so memory is the label image whatever the vertex count. Objects are drawn in
// file order and a later object wins the pixels it shares with an earlier one. The work of drawing
// is counted before each object is drawn (its row crossings and its bounding box, limits.ts), so a
// file whose objects are few but would take minutes to fill is refused before they are filled.

import { ScanPolygon } from "../../common/geometry/roi-raster.ts";
import { AnnotationImportError } from "./errors.ts";
import {
  IMPORT_COORDINATE_MARGIN,
  MAX_IMPORT_BOX_PIXELS,
  MAX_IMPORT_OBJECTS,
  MAX_IMPORT_VERTICES,
  MAX_IMPORT_VERTICES_PER_OBJECT,
  maxImportCrossings,
} from "./limits.ts";

/**
 * One object: closed rings as interleaved x, y in image pixel coordinates (x right, y down, (0, 0)
 * the top-left corner of the top-left pixel), without a repeated closing vertex.
 */
interface Outline {
  rings: Float64Array[];
  /** Where it came from, for error details: "feature 3", "entry 0007-cell.roi". */
  where: string;
}

export class OutlineCollector {
  readonly width: number;
  readonly height: number;
  /** Object i (file order) is i + 1 where it is visible. */
  readonly labels: Uint32Array;
  // The budgets spent so far, for the whole file: they only grow (nothing resets them), so no part
  // of a file can buy them again.
  private count = 0;
  private vertices = 0;
  private crossings = 0;
  private boxPixels = 0;

  constructor(width: number, height: number) {
    this.width = width;
    this.height = height;
    this.labels = new Uint32Array(width * height);
  }

  add(outline: Outline): void {
    if (this.count === MAX_IMPORT_OBJECTS) {
      throw new AnnotationImportError(
        "too_many_objects",
        `the file holds more than ${MAX_IMPORT_OBJECTS.toLocaleString("en-US")} objects, the most one import may hold`,
      );
    }
    let count = 0;
    for (const ring of outline.rings) {
      if (ring.length < 6) throw new AnnotationImportError("invalid_content", `${outline.where}: a ring has fewer than 3 vertices`);
      count += ring.length / 2;
      this.checkCoordinates(ring, outline.where);
    }
    if (count > MAX_IMPORT_VERTICES_PER_OBJECT) {
      throw new AnnotationImportError(
        "limit_exceeded",
        `${outline.where} has ${count} vertices; an object may have at most ${MAX_IMPORT_VERTICES_PER_OBJECT.toLocaleString("en-US")}`,
      );
    }
    this.vertices += count;
    if (this.vertices > MAX_IMPORT_VERTICES) {
      throw new AnnotationImportError(
        "limit_exceeded",
        `the file holds more than ${MAX_IMPORT_VERTICES.toLocaleString("en-US")} vertices, the most one import may hold`,
      );
    }
    this.draw(outline, ++this.count);
  }

  private draw(outline: Outline, label: number): void {
    const { width, height, labels } = this;
    let minX = Infinity,
      maxX = -Infinity;
    for (const ring of outline.rings) {
      for (let k = 0; k < ring.length; k += 2) {
        const x = ring[k]!;
        if (x < minX) minX = x;
        if (x > maxX) maxX = x;
      }
    }
    const shape = new ScanPolygon(outline.rings);
    // Rows and columns whose pixel centres the outline can hold, inside the image.
    const first = Math.max(0, shape.firstRow);
    const end = Math.min(height, shape.endRow);
    if (first >= end) return;
    const columns = Math.max(0, Math.min(width, Math.ceil(maxX - 0.5)) - Math.max(0, Math.ceil(minX - 0.5)));
    this.crossings += shape.crossingsIn(first, end);
    const maxCrossings = maxImportCrossings(width * height);
    if (this.crossings > maxCrossings) {
      throw new AnnotationImportError(
        "limit_exceeded",
        `${outline.where}: the outlines cross the image's pixel rows more than ${maxCrossings.toLocaleString("en-US")} times, the most an import into a ${width}x${height} image may (4 per pixel); an outline with far more edges than the pixels it covers is refused`,
      );
    }
    this.boxPixels += columns * (end - first);
    if (this.boxPixels > MAX_IMPORT_BOX_PIXELS) {
      throw new AnnotationImportError(
        "limit_exceeded",
        `${outline.where}: the objects' bounding boxes cover more than ${MAX_IMPORT_BOX_PIXELS.toLocaleString("en-US")} pixels, counting overlaps, the most one import may (${Math.floor(MAX_IMPORT_BOX_PIXELS / (width * height)).toLocaleString("en-US")} times this image); objects that overlap this much are not cells`,
      );
    }
    for (let y = first; y < end; y++) shape.fillRow(y, labels.subarray(y * width, (y + 1) * width), width, label);
  }

  private checkCoordinates(ring: Float64Array, where: string): void {
    const mx = IMPORT_COORDINATE_MARGIN * this.width,
      my = IMPORT_COORDINATE_MARGIN * this.height;
    // A ring is whole x, y pairs (Outline: the parsers build it as 2 × vertices), so i + 1 is in range.
    for (let i = 0; i < ring.length; i += 2) {
      const x = ring[i]!,
        y = ring[i + 1]!;
      if (!(x >= -mx && x <= this.width + mx && y >= -my && y <= this.height + my)) {
        throw new AnnotationImportError(
          "limit_exceeded",
          `${where}: vertex (${x}, ${y}) lies far outside the ${this.width}x${this.height} image; coordinates must be image pixel coordinates`,
        );
      }
    }
  }
}
