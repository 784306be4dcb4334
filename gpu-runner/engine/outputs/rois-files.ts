// GeoJSON and CSV of one segmentation for the CLI, written by the same formatters as the service's
// exports (schema/geojson-features.ts, schema/csv-rows.ts), so the files are the same.
import { CsvRowWriter } from "../../../schema/csv-rows.ts";
import { FEATURE_COLLECTION_END, FEATURE_COLLECTION_START, GeoJsonFeatureWriter } from "../../../schema/geojson-features.ts";
import { type ExportContext, MEASUREMENT_COLUMNS } from "../../../schema/measurements.ts";
import type { Roi } from "../../../schema/roi.ts";

export function roisGeoJson(rois: Roi[], context: ExportContext): string {
  const writer = new GeoJsonFeatureWriter(context);
  return FEATURE_COLLECTION_START + rois.map((roi, i) => (i === 0 ? "\n" : ",\n") + writer.feature(roi)).join("") + FEATURE_COLLECTION_END;
}

export function measurementsCsv(rois: Roi[], context: ExportContext): string {
  const writer = new CsvRowWriter(MEASUREMENT_COLUMNS, context);
  return writer.header() + rois.map((roi) => writer.row(roi)).join("");
}
