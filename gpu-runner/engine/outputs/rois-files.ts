// GeoJSON and CSV of one segmentation for the CLI, built from the shared measurement columns
// (schema/measurements.ts) so the files carry the same columns and conventions as the service's
// exports: pixel coordinates with y down, rings closed and counter-clockwise by RFC 7946's rule.
import { csvField } from "../../../schema/csv-field.ts";
import { MEASUREMENT_COLUMNS, type ExportContext, type MeasurementValue } from "../../../schema/measurements.ts";
import type { Roi } from "../../../schema/roi.ts";

export function roisGeoJson(rois: Roi[], context: ExportContext): string {
  const features = rois.map((roi) => {
    const properties: Record<string, MeasurementValue> = { objectType: "detection" };
    for (const column of MEASUREMENT_COLUMNS) properties[column.name] = finite(column.value(context, roi));
    return { type: "Feature", geometry: { type: "Polygon", coordinates: [ring(roi.polygon)] }, properties };
  });
  return JSON.stringify({ type: "FeatureCollection", features });
}

export function measurementsCsv(rois: Roi[], context: ExportContext): string {
  const lines = [MEASUREMENT_COLUMNS.map((c) => c.name).join(",")];
  for (const roi of rois) lines.push(MEASUREMENT_COLUMNS.map((c) => csvField(finite(c.value(context, roi)))).join(","));
  return lines.join("\r\n") + "\r\n";
}

function finite(value: MeasurementValue): MeasurementValue {
  return typeof value === "number" && !Number.isFinite(value) ? null : value;
}

function ring(polygon: Int32Array): number[][] {
  const n = polygon.length / 2;
  let twiceArea = 0;
  for (let i = 0; i < n; i++) {
    const j = (i + 1) % n;
    twiceArea += polygon[2 * i]! * polygon[2 * j + 1]! - polygon[2 * j]! * polygon[2 * i + 1]!;
  }
  const points: number[][] = [];
  for (let k = 0; k <= n; k++) {
    const v = twiceArea > 0 ? k % n : (n - k) % n;
    points.push([polygon[2 * v]!, polygon[2 * v + 1]!]);
  }
  return points;
}
