// The measurement columns' contract: their groups, what an export knows of the segmentation
// (ExportContext), how every exported number is written, an ROI's stable id and how channel names
// become column names. The columns themselves, each with how its value is computed, are one list in
// common/measurement-columns.ts: measurements.csv and rois.geojson are built from it. Without
// `columns` an export has the group "default": the 20 columns of the API contract, in its order,
// which clients are written against; every other column is asked for by name or by its group's name.

/** What an export knows about the segmentation besides its ROIs; built from the `segmentations` row. */
export interface ExportContext {
  segmentationId: string;
  /** "model" when our engine segmented the image, "import" when the user uploaded the masks. */
  segmentationSource: "model" | "import";
  /** The model that produced the segmentation; null for imports. */
  modelName: string | null;
  imageName: string;
  imageWidth: number;
  imageHeight: number;
  /** Fraction of the image covered by cells, 0..1; null when unknown. */
  confluency: number | null;
  /**
   * Micrometres per pixel along x and y, which the calibrated columns (µm, µm²) use: the
   * segmentation's (the prediction's `pixel_size_um`, else the file's); null or absent when
   * unknown, and those columns are empty.
   */
  pixelSize?: { x: number; y: number } | null;
  /**
   * The image's channels whose intensities the ROIs carry (the ROI artifact's header, version 2),
   * which name the intensity columns; absent or empty when there are none.
   */
  channels?: readonly string[];
  /** Whether the ROIs carry their cells (a prediction's cell expansion; the artifact's header), which the cell columns need. */
  cells?: boolean;
}

/** A cell value: CSV writes null as an empty field, GeoJSON as JSON null. */
export type MeasurementValue = string | number | null;

/** Significant digits an exported number keeps (pixels are float32, about 7 digits); never fewer than MEASUREMENT_DECIMALS decimals. */
const MEASUREMENT_SIGNIFICANT_DIGITS = 6;
const MEASUREMENT_DECIMALS = 4;

/**
 * An exported number as text, the one rule for measurements.csv and rois.geojson: rounded to
 * MEASUREMENT_SIGNIFICANT_DIGITS significant digits, but to no fewer than MEASUREMENT_DECIMALS
 * decimals (a centroid at x = 12345.6789 keeps its fourth decimal), so float noise such as
 * 14.365000000000002 is written 14.365; whole numbers (areas, boxes, integer images' sums, min and
 * max) are written exactly. A number that is not finite has no text: null.
 */
export function formatMeasurement(value: number): string | null {
  if (!Number.isFinite(value)) return null;
  if (Number.isInteger(value) || value === 0) return String(value);
  const magnitude = Math.floor(Math.log10(Math.abs(value))) + 1;
  const decimals = Math.min(100, Math.max(MEASUREMENT_DECIMALS, MEASUREMENT_SIGNIFICANT_DIGITS - magnitude));
  const rounded = Number(value.toFixed(decimals));
  return String(Object.is(rounded, -0) ? 0 : rounded);
}

export const MEASUREMENT_GROUPS = {
  default: "the 20 columns of the API contract, in its order: what an export without `columns` has",
  shape:
    "shape of each cell's mask: circularity, solidity, eccentricity, the fitted ellipse's axes and orientation, maximum Feret diameter, equivalent diameter",
  calibrated:
    "lengths in µm and areas in µm², with the pixel size (read from the file, or the prediction's `pixel_size_um`); empty when the pixel size is unknown",
  cell: "the cell grown around each nucleus by the prediction's cell_expansion_um or cell_expansion_px: its area, perimeter and centroid, the cytoplasm's area (the cell less its nucleus), the nucleus/cell area ratio, and per channel cytoplasm_<channel>_<statistic> of the cytoplasm's original pixel values; none without a cell expansion",
  intensity:
    "per channel of the image, intensity_<channel>_<statistic> with statistic mean, median, std, min, max, sum: the original pixel values inside the cell, as regionprops measures them; <channel> is the file's channel name (OME-XML) with every run of characters other than letters and digits made one _, else c0, c1, ...; an imported segmentation has them once a runner has measured its cells in the image (seconds after the import), and none before; none for segmentations made before intensities were measured",
  all: "every column, in the order of the column list",
} as const;

export type MeasurementGroup = Exclude<keyof typeof MEASUREMENT_GROUPS, "all">;

/**
 * A stable id for an ROI: the segmentation's id and the ROI's label (index + 1, its value in the
 * label mask). The same ROI gets the same id in every export and every download, and it is unique
 * across segmentations.
 */
export function roiId(segmentationId: string, index: number): string {
  return `${segmentationId}-${index + 1}`;
}

/**
 * The channels' names as they appear in column names: each run of characters other than letters
 * and digits becomes one "_" (none at either end), so "Alexa 488 (GFP)" is Alexa_488_GFP; an empty
 * result is c<index>, and a name met before gets _2, _3, ...
 */
export function channelColumnNames(channels: readonly string[]): string[] {
  const seen = new Set<string>();
  return channels.map((name, c) => {
    const base = name.replace(/[^\p{L}\p{N}]+/gu, "_").replace(/^_+|_+$/g, "") || `c${c}`;
    let unique = base;
    for (let n = 2; seen.has(unique); n++) unique = `${base}_${n}`;
    seen.add(unique);
    return unique;
  });
}

/** The groups' names, as `columns` may name them. */
export const MEASUREMENT_GROUP_NAMES = Object.keys(MEASUREMENT_GROUPS) as (keyof typeof MEASUREMENT_GROUPS)[];
