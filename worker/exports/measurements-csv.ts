// measurements.csv, streamed: the rows of common/csv-rows.ts, optionally of selected columns. UTF-8
// without a byte-order mark, so pandas and R read the first column name as is.

import { CsvRowWriter } from "../../common/csv-rows.ts";
import type { RoiArtifactContents } from "../../schema/roi-artifact.ts";
import type { ExportContext } from "../../schema/measurements.ts";
import type { MeasurementColumn } from "../../common/measurement-columns.ts";
import { pullStream, TextChunker } from "./pull-stream.ts";

/** Streams the CSV of `columns` (chosen by selectMeasurementColumns before any ROI is read). */
export function measurementsCsv(artifact: RoiArtifactContents, context: ExportContext, columns: readonly MeasurementColumn[]): ReadableStream<Uint8Array> {
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
