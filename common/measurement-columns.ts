// The measurement columns: the one list that measurements.csv (columns, in this order) and
// rois.geojson (feature properties) are built from, each with how its value is computed. Each
// column says where its value comes from (the export context, from the segmentation's D1 record,
// or the ROI, from the artifact), and which group (schema/measurements.ts) it belongs to.

import {
  channelColumnNames,
  type ExportContext,
  MEASUREMENT_GROUP_NAMES,
  type MEASUREMENT_GROUPS,
  type MeasurementGroup,
  type MeasurementValue,
  roiId,
} from "../schema/measurements.ts";
import { INTENSITY_STATS, type Roi } from "../schema/roi.ts";
import { tracedPerimeterParts } from "./geometry/roi-measure.ts";
import { circularity, equivalentDiameter, RoiShape } from "./geometry/roi-shape.ts";

/**
 * What the columns of one ROI compute from its outline, made once per ROI as the export reaches it
 * and only when a selected column asks (the default columns never do).
 */
export class RoiDerived {
  private readonly roi: Roi;
  private shapeValue: RoiShape | undefined;

  constructor(roi: Roi) {
    this.roi = roi;
  }

  /** Moments, hull and their measures (common/geometry/roi-shape.ts). */
  get shape(): RoiShape {
    this.shapeValue ??= new RoiShape(this.roi);
    return this.shapeValue;
  }
}

/**
 * The perimeter in µm of a pixel of sx × sy: perimeter_px scaled for square pixels; for oblong ones
 * ImageJ's traced perimeter with its calibration, from the outline, or null for an outline with
 * holes (its keyhole seams would count; measured alone, its rings' sums are not in the artifact).
 */
function calibratedPerimeter(roi: Roi, sx: number, sy: number): number | null {
  if (sx === sy) return roi.perimeter_px * sx;
  const { sumdx, sumdy, corners } = tracedPerimeterParts(roi.polygon);
  if (Math.abs(sumdx + sumdy - corners * (2 - Math.SQRT2) - roi.perimeter_px) > 1e-9 * roi.perimeter_px) return null;
  return sumdx * sx + sumdy * sy - corners * (sx + sy - Math.hypot(sx, sy));
}

/** A calibrated column's value: `f` of the pixel size, or null (an empty field) when it is unknown. */
const calibrated =
  (f: (sx: number, sy: number, roi: Roi, derived: RoiDerived) => number | null) =>
  (c: ExportContext, roi: Roi, derived: RoiDerived): MeasurementValue =>
    c.pixelSize ? f(c.pixelSize.x, c.pixelSize.y, roi, derived) : null;

export interface MeasurementColumn {
  name: string;
  type: "string" | "number";
  /** "segmentation": the same for every ROI of an export (formatters encode it once); "roi": per ROI. */
  source: "segmentation" | "roi";
  group: MeasurementGroup;
  description: string;
  value: (context: ExportContext, roi: Roi, derived: RoiDerived) => MeasurementValue;
}

export const MEASUREMENT_COLUMNS = [
  { name: "image_name", type: "string", source: "segmentation", group: "default", description: "file name of the segmented image", value: (c) => c.imageName },
  { name: "image_width", type: "number", source: "segmentation", group: "default", description: "image width in pixels", value: (c) => c.imageWidth },
  { name: "image_height", type: "number", source: "segmentation", group: "default", description: "image height in pixels", value: (c) => c.imageHeight },
  { name: "segmentation_id", type: "string", source: "segmentation", group: "default", description: "id of the segmentation", value: (c) => c.segmentationId },
  {
    name: "segmentation_source",
    type: "string",
    source: "segmentation",
    group: "default",
    description: '"model" or "import"',
    value: (c) => c.segmentationSource,
  },
  {
    name: "model_name",
    type: "string",
    source: "segmentation",
    group: "default",
    description: "model that segmented the image (empty for imports)",
    value: (c) => c.modelName,
  },
  {
    name: "confluency",
    type: "number",
    source: "segmentation",
    group: "default",
    description: "fraction of the image covered by cells, 0..1",
    value: (c) => c.confluency,
  },
  {
    name: "roi_index",
    type: "number",
    source: "roi",
    group: "default",
    description: "1-based position of the ROI, equal to its label in masks.png and masks.tif",
    value: (_c, r) => r.index + 1,
  },
  {
    name: "roi_id",
    type: "string",
    source: "roi",
    group: "default",
    description: "stable id: <segmentation_id>-<roi_index>",
    value: (c, r) => roiId(c.segmentationId, r.index),
  },
  // Empty until a classification feature exists (then they become per-ROI, source "roi"); kept so
  // files keep one shape over time.
  { name: "cell_type", type: "string", source: "segmentation", group: "default", description: "class of the cell (empty until classified)", value: () => "" },
  {
    name: "tags",
    type: "string",
    source: "segmentation",
    group: "default",
    description: "user tags, semicolon-separated (empty until tagged)",
    value: () => "",
  },
  { name: "entity_type", type: "string", source: "segmentation", group: "default", description: 'what the ROI outlines: "cell"', value: () => "cell" },
  { name: "area_px", type: "number", source: "roi", group: "default", description: "pixels in the mask", value: (_c, r) => r.area_px },
  {
    name: "perimeter_px",
    type: "number",
    source: "roi",
    group: "default",
    description: "traced pixel-edge perimeter as ImageJ measures it",
    value: (_c, r) => r.perimeter_px,
  },
  { name: "centroid_x", type: "number", source: "roi", group: "default", description: "mean x of the mask's pixel centres", value: (_c, r) => r.centroid_x },
  { name: "centroid_y", type: "number", source: "roi", group: "default", description: "mean y of the mask's pixel centres", value: (_c, r) => r.centroid_y },
  { name: "bbox_x", type: "number", source: "roi", group: "default", description: "bounding box left, pixels", value: (_c, r) => r.bbox_x },
  { name: "bbox_y", type: "number", source: "roi", group: "default", description: "bounding box top, pixels", value: (_c, r) => r.bbox_y },
  { name: "bbox_w", type: "number", source: "roi", group: "default", description: "bounding box width, pixels", value: (_c, r) => r.bbox_w },
  { name: "bbox_h", type: "number", source: "roi", group: "default", description: "bounding box height, pixels", value: (_c, r) => r.bbox_h },
  // Shape, from the outline at export time (common/geometry/roi-shape.ts says whose definition each follows).
  {
    name: "circularity",
    type: "number",
    source: "roi",
    group: "shape",
    description: "4π·area_px/perimeter_px², ImageJ's Circ. with its traced perimeter, capped at 1 as ImageJ caps it (1 is a circle)",
    value: (_c, r) => circularity(r.area_px, r.perimeter_px),
  },
  {
    name: "solidity",
    type: "number",
    source: "roi",
    group: "shape",
    description:
      "area_px over the area of the convex hull of the outline's pixel corners, as ImageJ's Solidity (regionprops divides by the pixel count of its convex hull image instead)",
    value: (_c, r, d) => r.area_px / d.shape.hullArea(),
  },
  {
    name: "eccentricity",
    type: "number",
    source: "roi",
    group: "shape",
    description: "of the ellipse with the mask's second moments, √(1 − λ2/λ1), as regionprops; 0 is a circle, towards 1 a line",
    value: (_c, _r, d) => d.shape.ellipse().eccentricity,
  },
  {
    name: "major_axis_px",
    type: "number",
    source: "roi",
    group: "shape",
    description:
      "major axis of the ellipse with the mask's second moments (pixel centres), 4·√λ1, as regionprops' axis_major_length; ImageJ's Fit Ellipse rescales its axes to the pixel count's area",
    value: (_c, _r, d) => d.shape.ellipse().majorAxis,
  },
  {
    name: "minor_axis_px",
    type: "number",
    source: "roi",
    group: "shape",
    description: "minor axis of the same ellipse, 4·√λ2, as regionprops' axis_minor_length",
    value: (_c, _r, d) => d.shape.ellipse().minorAxis,
  },
  {
    name: "orientation_deg",
    type: "number",
    source: "roi",
    group: "shape",
    description:
      "angle of the ellipse's major axis, degrees in [0, 180) counter-clockwise from the image's x axis as seen on screen, as ImageJ's Angle; regionprops' orientation φ is the same axis: (90 + φ·180/π) mod 180",
    value: (_c, _r, d) => d.shape.ellipse().orientationDeg,
  },
  {
    name: "feret_max_px",
    type: "number",
    source: "roi",
    group: "shape",
    description:
      "maximum Feret diameter: the largest distance between two corners of the outline, as ImageJ's Feret (regionprops' feret_diameter_max measures a contour through pixel edges' midpoints, a little shorter)",
    value: (_c, _r, d) => d.shape.feretMax(),
  },
  {
    name: "equivalent_diameter_px",
    type: "number",
    source: "roi",
    group: "shape",
    description: "diameter of the circle of the same area, √(4·area_px/π), as regionprops' equivalent_diameter_area",
    value: (_c, r) => equivalentDiameter(r.area_px),
  },
  // Calibrated: the same measures in micrometres; empty when the pixel size is unknown.
  {
    name: "pixel_size_x_um",
    type: "number",
    source: "segmentation",
    group: "calibrated",
    description: "micrometres per pixel along x: the prediction's pixel_size_um, else the file's (OME-XML, ImageJ, TIFF resolution); empty when unknown",
    value: (c) => c.pixelSize?.x ?? null,
  },
  {
    name: "pixel_size_y_um",
    type: "number",
    source: "segmentation",
    group: "calibrated",
    description: "micrometres per pixel along y",
    value: (c) => c.pixelSize?.y ?? null,
  },
  {
    name: "area_um2",
    type: "number",
    source: "roi",
    group: "calibrated",
    description: "area_px × the pixel's area, µm²",
    value: calibrated((sx, sy, r) => r.area_px * sx * sy),
  },
  {
    name: "perimeter_um",
    type: "number",
    source: "roi",
    group: "calibrated",
    description:
      "ImageJ's traced perimeter in µm: perimeter_px × the pixel size; with oblong pixels ImageJ's calibrated formula (empty for a cell with holes then)",
    value: calibrated((sx, sy, r) => calibratedPerimeter(r, sx, sy)),
  },
  {
    name: "centroid_x_um",
    type: "number",
    source: "roi",
    group: "calibrated",
    description: "centroid_x in µm from the image's left edge",
    value: calibrated((sx, _sy, r) => r.centroid_x * sx),
  },
  {
    name: "centroid_y_um",
    type: "number",
    source: "roi",
    group: "calibrated",
    description: "centroid_y in µm from the image's top edge",
    value: calibrated((_sx, sy, r) => r.centroid_y * sy),
  },
  {
    name: "major_axis_um",
    type: "number",
    source: "roi",
    group: "calibrated",
    description: "major_axis_px in µm: the ellipse of the pixel centres' second moments in µm (as regionprops with spacing)",
    value: calibrated((sx, sy, _r, d) => d.shape.ellipse(sx, sy).majorAxis),
  },
  {
    name: "minor_axis_um",
    type: "number",
    source: "roi",
    group: "calibrated",
    description: "minor_axis_px in µm, likewise",
    value: calibrated((sx, sy, _r, d) => d.shape.ellipse(sx, sy).minorAxis),
  },
  {
    name: "feret_max_um",
    type: "number",
    source: "roi",
    group: "calibrated",
    description: "feret_max_px in µm: the largest distance between two corners of the outline, measured in µm",
    value: calibrated((sx, sy, _r, d) => d.shape.feretMax(sx, sy)),
  },
  {
    name: "equivalent_diameter_um",
    type: "number",
    source: "roi",
    group: "calibrated",
    description: "diameter of the circle of area_um2, √(4·area_um2/π)",
    value: calibrated((sx, sy, r) => equivalentDiameter(r.area_px * sx * sy)),
  },
] as const satisfies readonly MeasurementColumn[];

/** The intensity group's columns for these channels, channel by channel, INTENSITY_STATS in order. */
function intensityColumns(channels: readonly string[]): MeasurementColumn[] {
  const statDescriptions: Record<(typeof INTENSITY_STATS)[number], string> = {
    mean: "mean of the original pixel values inside the cell (regionprops' intensity_mean)",
    median: "median of those values (of an even count, the mean of the two middle ones)",
    std: "their standard deviation, ddof 0 (numpy's np.std, regionprops' intensity_std)",
    min: "their minimum (regionprops' intensity_min)",
    max: "their maximum (regionprops' intensity_max)",
    sum: "their sum, the integrated intensity",
  };
  return channelColumnNames(channels).flatMap((channel, c) =>
    INTENSITY_STATS.map(
      (stat, s): MeasurementColumn => ({
        name: `intensity_${channel}_${stat}`,
        type: "number",
        source: "roi",
        group: "intensity",
        description: `channel ${c} (${JSON.stringify(channels[c])}): ${statDescriptions[stat]}`,
        value: (_c, r) => r.intensity?.[c * INTENSITY_STATS.length + s] ?? null,
      }),
    ),
  );
}

/** The cell group's columns: the grown cell's measurements, then its cytoplasm's intensities per channel. */
function cellColumns(channels: readonly string[]): MeasurementColumn[] {
  const cell = (name: string, description: string, value: (c: ExportContext, r: Roi) => MeasurementValue): MeasurementColumn => ({
    name,
    type: "number",
    source: "roi",
    group: "cell",
    description,
    value: (c, r) => (r.cell ? value(c, r) : null),
  });
  const cytoplasm = channelColumnNames(channels).flatMap((channel, c) =>
    INTENSITY_STATS.map((stat, s) =>
      cell(
        `cytoplasm_${channel}_${stat}`,
        `channel ${c} (${JSON.stringify(channels[c])}): ${stat} of the original pixel values of the cell less its nucleus (empty where the nucleus fills its cell)`,
        (_c, r) => r.cell!.cytoplasmIntensity?.[c * INTENSITY_STATS.length + s] ?? null,
      ),
    ),
  );
  return [
    cell("cell_area_px", "pixels of the cell grown around the nucleus (the nucleus's included)", (_c, r) => r.cell!.area_px),
    cell("cell_perimeter_px", "the cell outline's traced perimeter, as perimeter_px", (_c, r) => r.cell!.perimeter_px),
    cell("cell_centroid_x", "mean x of the cell's pixel centres", (_c, r) => r.cell!.centroid_x),
    cell("cell_centroid_y", "mean y of the cell's pixel centres", (_c, r) => r.cell!.centroid_y),
    cell("cytoplasm_area_px", "pixels of the cell less its nucleus", (_c, r) => r.cell!.area_px - r.area_px),
    cell("nucleus_cell_area_ratio", "area_px / cell_area_px (QuPath's Nucleus/Cell area ratio)", (_c, r) => r.area_px / r.cell!.area_px),
    cell("cell_area_um2", "cell_area_px × the pixel's area, µm²; empty when the pixel size is unknown", (c, r) =>
      c.pixelSize ? r.cell!.area_px * c.pixelSize.x * c.pixelSize.y : null,
    ),
    ...cytoplasm,
  ];
}

/** Every column a segmentation's exports offer: the fixed list, then its cells' and its channels' columns. */
export function measurementColumns(context: Pick<ExportContext, "channels" | "cells">): readonly MeasurementColumn[] {
  const channels = context.channels ?? [];
  if (channels.length === 0 && !context.cells) return MEASUREMENT_COLUMNS;
  return [...MEASUREMENT_COLUMNS, ...(context.cells ? cellColumns(channels) : []), ...intensityColumns(channels)];
}

type MeasurementColumnName = (typeof MEASUREMENT_COLUMNS)[number]["name"];

export const MEASUREMENT_COLUMN_NAMES: readonly MeasurementColumnName[] = MEASUREMENT_COLUMNS.map((c) => c.name);

/** The columns of an export without `columns`: the API contract's 20, in its order. */
export const DEFAULT_MEASUREMENT_COLUMNS: readonly MeasurementColumn[] = MEASUREMENT_COLUMNS.filter((c) => c.group === "default");

/** The columns of a group, in the column list's order. */
function groupColumns(group: keyof typeof MEASUREMENT_GROUPS, columns: readonly MeasurementColumn[] = MEASUREMENT_COLUMNS): MeasurementColumn[] {
  return columns.filter((c) => group === "all" || c.group === group);
}

/** Asked-for column names that are neither a column nor a group; the route answers 400 with this message. */
export class UnknownMeasurementColumnsError extends Error {
  readonly unknown: readonly string[];
  readonly valid: readonly string[];
  readonly groups: readonly string[];

  constructor(
    unknown: readonly string[],
    valid: readonly string[] = MEASUREMENT_COLUMN_NAMES,
    groups: readonly string[] = availableGroups(MEASUREMENT_COLUMNS),
  ) {
    super(`unknown column(s): ${unknown.join(", ")}; valid columns: ${valid.join(", ")}; or a group of them: ${groups.join(", ")}`);
    this.name = "UnknownMeasurementColumnsError";
    this.unknown = unknown;
    this.valid = valid;
    this.groups = groups;
  }
}

/** The groups with columns among `columns` (intensity has none where nothing was measured), and `all`. */
function availableGroups(columns: readonly MeasurementColumn[]): string[] {
  return MEASUREMENT_GROUP_NAMES.filter((g) => g === "all" || columns.some((c) => c.group === g));
}

/**
 * The columns `names` ask for, in that order: a column's name stands for itself, a group's name
 * (MEASUREMENT_GROUPS) for its columns in the list's order, and a column asked for twice (by name
 * or through a group) comes once, where it was first asked for. Absent or empty: the default
 * columns. `columns`: the segmentation's (measurementColumns). A name that is neither, or a group
 * with no columns here (intensity of a segmentation that measured none), throws
 * UnknownMeasurementColumnsError naming every such name.
 */
export function selectMeasurementColumns(names?: readonly string[], columns: readonly MeasurementColumn[] = MEASUREMENT_COLUMNS): readonly MeasurementColumn[] {
  if (!names || names.length === 0) return columns.filter((c) => c.group === "default");
  const byName = new Map<string, MeasurementColumn>(columns.map((c) => [c.name, c]));
  const groups = availableGroups(columns);
  const unknown = names.filter((n) => !byName.has(n) && !groups.includes(n));
  if (unknown.length > 0)
    throw new UnknownMeasurementColumnsError(
      [...new Set(unknown)],
      columns.map((c) => c.name),
      groups,
    );
  const chosen = new Set<MeasurementColumn>();
  for (const name of names) {
    const column = byName.get(name);
    if (column) chosen.add(column);
    else for (const c of groupColumns(name as keyof typeof MEASUREMENT_GROUPS, columns)) chosen.add(c);
  }
  return [...chosen];
}
