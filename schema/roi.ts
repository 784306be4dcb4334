// The shape of one segmented object as the engine produces it and the ROI artifact stores it.
// Coordinates are image pixel coordinates with the origin at the top-left corner of pixel (0,0):
// polygon vertices sit on pixel corners (integers), centroids use pixel centres (x + 0.5).

export interface RoiMeasurements {
  /** Number of pixels in the mask. */
  area_px: number;
  /** Length of the traced pixel-edge polygon, as ImageJ measures a traced ROI. */
  perimeter_px: number;
  /** Mean of the mask's pixel centres. */
  centroid_x: number;
  centroid_y: number;
  /** Bounding box of the mask in pixels: left, top, width, height. */
  bbox_x: number;
  bbox_y: number;
  bbox_w: number;
  bbox_h: number;
}

/**
 * The statistics of a cell's original pixel values, per channel, in this order (ROI artifact
 * version 2; the `intensity` column group): as scikit-image's regionprops computes them, the
 * standard deviation with ddof 0 (numpy's default), the median of an even count the mean of its two
 * middle values, the sum the integrated intensity.
 */
export const INTENSITY_STATS = ["mean", "median", "std", "min", "max", "sum"] as const;

export interface Roi extends RoiMeasurements {
  /**
   * 0-based position in the segmentation's order: masks sorted by the raster position of their
   * first pixel (top row first, then leftmost). The label value is index + 1. Streaming consumers
   * (label-mask rendering) rely on this order: bbox_y never decreases along it.
   */
  index: number;
  /**
   * Outline along pixel edges as interleaved integer corner coordinates [x0, y0, x1, y1, ...],
   * without repeating the first vertex. Its shoelace area equals area_px. The engine's outlines
   * have no collinear vertices; an imported object with holes has one keyhole outline (the outer
   * ring, seams walked both ways and the holes' rings: common/geometry/roi-measure.ts), which the even-odd
   * rule fills with exactly the object's pixels.
   */
  polygon: Int32Array;
  /**
   * Per channel of the image, INTENSITY_STATS of the pixels inside the outline, from the original
   * pixel values (not the network's normalised input): channel c's statistic s at
   * [c * INTENSITY_STATS.length + s]. Absent when the segmentation measured none (imports, and
   * artifacts of format version 1).
   */
  intensity?: Float64Array;
  /**
   * The cell grown around this nucleus by a prediction's cell expansion (ROI artifact version 2,
   * flag bit 1): its outline and measurements, and its cytoplasm's intensities. Absent without one.
   */
  cell?: RoiCell;
}

/** A nucleus's cell: the grown region's outline (the same conventions as the nucleus's) and measurements. */
export interface RoiCell extends RoiMeasurements {
  polygon: Int32Array;
  /**
   * Per channel, INTENSITY_STATS of the cell's pixels that are not the nucleus's (the cytoplasm),
   * laid out as Roi.intensity; NaN where the cell has no such pixel. Present when the nucleus has intensities.
   */
  cytoplasmIntensity?: Float64Array;
}
