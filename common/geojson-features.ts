// GeoJSON text of ROIs, shared by the service's rois.geojson export (worker/exports/rois-geojson.ts,
// streamed) and the segment CLI's file (gpu-runner/engine/outputs/rois-files.ts): a FeatureCollection
// (RFC 7946) with one Polygon per ROI, in image pixel coordinates: x to the right, y down, (0, 0)
// the top-left corner of the top-left pixel, vertices on pixel corners (the same outline as the
// ImageJ ROIs). QuPath reads exactly this convention and imports features whose properties carry
// `objectType` ("detection") and, optionally, `classification` ({ name }). A segmentation with cells
// (a prediction's cell expansion) can be written as QuPath's cell objects instead: `objectType`
// "cell", the cell's outline as `geometry` and the nucleus's as `nucleusGeometry`, a member of the
// feature beside `geometry`, as QuPath writes and reads a cell.
//
// Ring orientation. RFC 7946 wants exterior rings counter-clockwise, which it defines by the
// coordinates as numbers (right-hand rule). We make the shoelace sum
//   S = sum over i of (x[i] * y[i+1] - x[i+1] * y[i])
// positive, which is counter-clockwise in a y-up frame. Drawn on an image, where y points down,
// such a ring runs clockwise on screen. QuPath (through JTS) accepts either orientation, so the
// RFC's rule decides.
import { type ExportContext, formatMeasurement, type MeasurementValue, roiId } from "../schema/measurements.ts";
import { DEFAULT_MEASUREMENT_COLUMNS, MEASUREMENT_COLUMNS, type MeasurementColumn, RoiDerived } from "./measurement-columns.ts";
import type { Roi } from "../schema/roi.ts";

/** What comes before the first feature and after the last; features are separated by ",\n". */
export const FEATURE_COLLECTION_START = '{"type":"FeatureCollection","features":[';
export const FEATURE_COLLECTION_END = "\n]}\n";

/** Twice the signed area of the polygon by the shoelace formula, on (x, y) as given. */
function shoelaceSum(polygon: Int32Array): number {
  let sum = 0;
  const n = polygon.length;
  for (let i = 0; i < n; i += 2) {
    const j = (i + 2) % n;
    sum += polygon[i]! * polygon[j + 1]! - polygon[j]! * polygon[i + 1]!;
  }
  return sum;
}

/** The exterior ring as GeoJSON text: counter-clockwise by the RFC's rule and closed. */
function ringJson(polygon: Int32Array): string {
  const n = polygon.length / 2;
  const forward = shoelaceSum(polygon) > 0;
  let out = "[";
  for (let k = 0; k <= n; k++) {
    const v = forward ? k % n : (n - k) % n;
    out += `${k > 0 ? ",[" : "["}${polygon[2 * v]},${polygon[2 * v + 1]}]`;
  }
  return `${out}]`;
}

function jsonValue(value: MeasurementValue): string {
  if (typeof value === "number") return formatMeasurement(value) ?? "null";
  return value === null ? "null" : JSON.stringify(value);
}

const CELL_TYPE: MeasurementColumn = MEASUREMENT_COLUMNS.find((c) => c.name === "cell_type")!;

/**
 * Writes features as text directly: the segmentation-level properties are encoded once per export,
 * which keeps 100,000 features well inside the export's time budget (JSON.stringify of a fresh
 * object per feature was the bottleneck). The properties are the chosen measurement columns
 * (measurement-columns.ts; the default ones unless `columns` says otherwise), then QuPath's.
 */
export class GeoJsonFeatureWriter {
  private readonly context: ExportContext;
  private readonly columns: readonly MeasurementColumn[];
  private readonly keys: string[];
  private readonly fixed: (string | null)[];

  /** QuPath cell objects: the cell's outline as the geometry, the nucleus's as nucleusGeometry. */
  private readonly cells: boolean;

  constructor(context: ExportContext, columns: readonly MeasurementColumn[] = DEFAULT_MEASUREMENT_COLUMNS, options: { cells?: boolean } = {}) {
    this.context = context;
    this.columns = columns;
    this.cells = options.cells ?? false;
    this.keys = columns.map((c, i) => `${i === 0 ? "" : ","}${JSON.stringify(c.name)}:`);
    this.fixed = columns.map(() => null);
  }

  feature(roi: Roi): string {
    let properties = "{";
    const derived = new RoiDerived(roi);
    const columns = this.columns;
    for (let i = 0; i < columns.length; i++) {
      const column = columns[i]!;
      properties += this.keys[i];
      if (column.source === "roi") properties += jsonValue(column.value(this.context, roi, derived));
      else properties += this.fixed[i] ??= jsonValue(column.value(this.context, roi, derived));
    }
    const cellType = CELL_TYPE.value(this.context, roi, derived);
    const cell = this.cells ? roi.cell : undefined;
    if (this.cells && !cell) throw new Error(`ROI ${roi.index} has no cell to export as a QuPath cell object`);
    properties += `${columns.length > 0 ? "," : ""}"objectType":${cell ? '"cell"' : '"detection"'}`;
    // QuPath reads `classification` as a class object; an absent one means "unclassified", while a
    // null may not parse in every QuPath version, so the key appears once a cell type exists.
    if (typeof cellType === "string" && cellType !== "") properties += `,"classification":{"name":${JSON.stringify(cellType)}}`;
    const id = `{"type":"Feature","id":${JSON.stringify(roiId(this.context.segmentationId, roi.index))},`;
    if (cell)
      return (
        `${id}"geometry":{"type":"Polygon","coordinates":[${ringJson(cell.polygon)}]},` +
        `"nucleusGeometry":{"type":"Polygon","coordinates":[${ringJson(roi.polygon)}]},` +
        `"properties":${properties}}}`
      );
    return `${id}"geometry":{"type":"Polygon","coordinates":[${ringJson(roi.polygon)}]},"properties":${properties}}}`;
  }
}
