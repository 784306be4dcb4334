// GeoJSON and CSV of one segmentation for the CLI, written by the same formatters as the service's
// exports (common/geojson-features.ts, common/csv-rows.ts), so the files are the same; streamed a
// cell at a time, whatever the count.
import { CsvRowWriter } from "../../../common/csv-rows.ts";
import { FEATURE_COLLECTION_END, FEATURE_COLLECTION_START, GeoJsonFeatureWriter } from "../../../common/geojson-features.ts";
import type { ExportContext } from "../../../schema/measurements.ts";
import { DEFAULT_MEASUREMENT_COLUMNS } from "../../../common/measurement-columns.ts";
import type { Roi } from "../../../schema/roi.ts";
import { BufferedFile } from "./buffered-file.ts";

export async function writeRoisGeoJson(path: string, rois: Iterable<Roi>, context: ExportContext): Promise<void> {
  const writer = new GeoJsonFeatureWriter(context);
  const file = await BufferedFile.create(path);
  await file.write(FEATURE_COLLECTION_START);
  let first = true;
  for (const roi of rois) {
    await file.write((first ? "\n" : ",\n") + writer.feature(roi));
    first = false;
  }
  await file.write(FEATURE_COLLECTION_END);
  await file.close();
}

export async function writeMeasurementsCsv(path: string, rois: Iterable<Roi>, context: ExportContext): Promise<void> {
  const writer = new CsvRowWriter(DEFAULT_MEASUREMENT_COLUMNS, context);
  const file = await BufferedFile.create(path);
  await file.write(writer.header());
  for (const roi of rois) await file.write(writer.row(roi));
  await file.close();
}
