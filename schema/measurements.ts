// The measurement columns: the one list that measurements.csv (columns, in this order) and
// rois.geojson (feature properties) are built from. Each column says where its value comes from:
// the export context (the segmentation's D1 record) or the ROI (the artifact).

import type { Roi } from "./roi.ts";

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
}

/** A cell value: CSV writes null as an empty field, GeoJSON as JSON null. */
export type MeasurementValue = string | number | null;

export interface MeasurementColumn {
  name: string;
  type: "string" | "number";
  /** "segmentation": the same for every ROI of an export (formatters encode it once); "roi": per ROI. */
  source: "segmentation" | "roi";
  description: string;
  value: (context: ExportContext, roi: Roi) => MeasurementValue;
}

/**
 * A stable id for an ROI: the segmentation's id and the ROI's label (index + 1, its value in the
 * label mask). The same ROI gets the same id in every export and every download, and it is unique
 * across segmentations.
 */
export function roiId(segmentationId: string, index: number): string {
  return `${segmentationId}-${index + 1}`;
}

export const MEASUREMENT_COLUMNS = [
  { name: "image_name", type: "string", source: "segmentation", description: "file name of the segmented image", value: (c) => c.imageName },
  { name: "image_width", type: "number", source: "segmentation", description: "image width in pixels", value: (c) => c.imageWidth },
  { name: "image_height", type: "number", source: "segmentation", description: "image height in pixels", value: (c) => c.imageHeight },
  { name: "segmentation_id", type: "string", source: "segmentation", description: "id of the segmentation", value: (c) => c.segmentationId },
  { name: "segmentation_source", type: "string", source: "segmentation", description: '"model" or "import"', value: (c) => c.segmentationSource },
  { name: "model_name", type: "string", source: "segmentation", description: "model that segmented the image (empty for imports)", value: (c) => c.modelName },
  { name: "confluency", type: "number", source: "segmentation", description: "fraction of the image covered by cells, 0..1", value: (c) => c.confluency },
  {
    name: "roi_index",
    type: "number",
    source: "roi",
    description: "1-based position of the ROI, equal to its label in masks.png and masks.tif",
    value: (_c, r) => r.index + 1,
  },
  { name: "roi_id", type: "string", source: "roi", description: "stable id: <segmentation_id>-<roi_index>", value: (c, r) => roiId(c.segmentationId, r.index) },
  // Empty until a classification feature exists (then they become per-ROI, source "roi"); kept so
  // files keep one shape over time.
  { name: "cell_type", type: "string", source: "segmentation", description: "class of the cell (empty until classified)", value: () => "" },
  { name: "tags", type: "string", source: "segmentation", description: "user tags, semicolon-separated (empty until tagged)", value: () => "" },
  { name: "entity_type", type: "string", source: "segmentation", description: 'what the ROI outlines: "cell"', value: () => "cell" },
  { name: "area_px", type: "number", source: "roi", description: "pixels in the mask", value: (_c, r) => r.area_px },
  { name: "perimeter_px", type: "number", source: "roi", description: "traced pixel-edge perimeter as ImageJ measures it", value: (_c, r) => r.perimeter_px },
  { name: "centroid_x", type: "number", source: "roi", description: "mean x of the mask's pixel centres", value: (_c, r) => r.centroid_x },
  { name: "centroid_y", type: "number", source: "roi", description: "mean y of the mask's pixel centres", value: (_c, r) => r.centroid_y },
  { name: "bbox_x", type: "number", source: "roi", description: "bounding box left, pixels", value: (_c, r) => r.bbox_x },
  { name: "bbox_y", type: "number", source: "roi", description: "bounding box top, pixels", value: (_c, r) => r.bbox_y },
  { name: "bbox_w", type: "number", source: "roi", description: "bounding box width, pixels", value: (_c, r) => r.bbox_w },
  { name: "bbox_h", type: "number", source: "roi", description: "bounding box height, pixels", value: (_c, r) => r.bbox_h },
] as const satisfies readonly MeasurementColumn[];

export type MeasurementColumnName = (typeof MEASUREMENT_COLUMNS)[number]["name"];

export const MEASUREMENT_COLUMN_NAMES: readonly MeasurementColumnName[] = MEASUREMENT_COLUMNS.map((c) => c.name);

/** Asked-for column names that do not exist; the route answers 400 with this message. */
export class UnknownMeasurementColumnsError extends Error {
  readonly unknown: readonly string[];
  readonly valid: readonly string[];

  constructor(unknown: readonly string[]) {
    super(`unknown column(s): ${unknown.join(", ")}; valid columns: ${MEASUREMENT_COLUMN_NAMES.join(", ")}`);
    this.name = "UnknownMeasurementColumnsError";
    this.unknown = unknown;
    this.valid = MEASUREMENT_COLUMN_NAMES;
  }
}

/** The columns named in `names`, in that order; all columns when `names` is absent or empty. */
export function selectMeasurementColumns(names?: readonly string[]): readonly MeasurementColumn[] {
  if (!names || names.length === 0) return MEASUREMENT_COLUMNS;
  const byName = new Map<string, MeasurementColumn>(MEASUREMENT_COLUMNS.map((c) => [c.name, c]));
  const unknown = names.filter((n) => !byName.has(n));
  if (unknown.length > 0) throw new UnknownMeasurementColumnsError([...new Set(unknown)]);
  return names.map((n) => byName.get(n)!);
}
