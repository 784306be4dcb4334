// measurements.csv, streamed: the rows of schema/csv-rows.ts, optionally of selected columns. UTF-8
// without a byte-order mark, so pandas and R read the first column name as is.

import { CsvRowWriter } from "../../schema/csv-rows.ts";
import type { RoiArtifactContents } from "../../schema/roi-artifact.ts";
import { selectMeasurementColumns } from "../../schema/measurements.ts";
import type { ExportContext } from "../../schema/measurements.ts";
import { pullStream, TextChunker } from "./pull-stream.ts";

export interface MeasurementsCsvOptions {
  /** Column and group names in the order wanted; the default columns when absent or empty. Unknown names throw UnknownMeasurementColumnsError. */
  columns?: readonly string[];
}

/** Validates the options at once (before any ROI is read), then streams the CSV. */
export function measurementsCsv(artifact: RoiArtifactContents, context: ExportContext, options: MeasurementsCsvOptions = {}): ReadableStream<Uint8Array> {
  const columns = selectMeasurementColumns(options.columns);
  async function* rows(): AsyncGenerator<Uint8Array> {
    const text = new TextChunker();
    const writer = new CsvRowWriter(columns, context);
    text.push(writer.header());
    for await (const roi of artifact.rois) {
      const chunk = text.push(writer.row(roi));
      if (chunk) yield chunk;
    }
    yield text.flush();
  }
  return pullStream(rows());
}
