// measurements.csv: one row per ROI, the columns of schema/measurements.ts, RFC 4180 with CRLF line
// ends; fields are written by schema/csv-field.ts (quoting, formula neutralising). UTF-8 without a
// byte-order mark, so pandas and R read the first column name as is.

import { csvField } from "../../schema/csv-field.ts";
import type { RoiArtifactContents } from "../../schema/roi-artifact.ts";
import { selectMeasurementColumns } from "../../schema/measurements.ts";
import type { ExportContext } from "../../schema/measurements.ts";
import { pullStream, TextChunker } from "./pull-stream.ts";

export interface MeasurementsCsvOptions {
  /** Column names in the order wanted; all columns when absent or empty. Unknown names throw UnknownMeasurementColumnsError. */
  columns?: readonly string[];
}

/** Validates the options at once (before any ROI is read), then streams the CSV. */
export function measurementsCsv(artifact: RoiArtifactContents, context: ExportContext, options: MeasurementsCsvOptions = {}): ReadableStream<Uint8Array> {
  const columns = selectMeasurementColumns(options.columns);
  async function* rows(): AsyncGenerator<Uint8Array> {
    const text = new TextChunker();
    text.push(columns.map((c) => csvField(c.name)).join(",") + "\r\n");
    // Segmentation-level fields are the same on every row: quote them once.
    const fixed: (string | null)[] = columns.map(() => null);
    for await (const roi of artifact.rois) {
      let line = "";
      for (let i = 0; i < columns.length; i++) {
        const column = columns[i];
        if (i > 0) line += ",";
        if (column.source === "roi") line += csvField(column.value(context, roi));
        else line += fixed[i] ??= csvField(column.value(context, roi));
      }
      const chunk = text.push(line + "\r\n");
      if (chunk) yield chunk;
    }
    yield text.flush();
  }
  return pullStream(rows());
}
