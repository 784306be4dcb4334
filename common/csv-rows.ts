// measurements.csv rows, shared by the service's export (worker/exports/measurements-csv.ts,
// streamed) and the segment CLI's file (gpu-runner/engine/outputs/rois-files.ts): one row per ROI,
// the chosen columns of common/measurement-columns.ts, RFC 4180 with CRLF line ends, fields written by
// schema/csv-field.ts (quoting, formula neutralising).
import { csvField } from "../schema/csv-field.ts";
import type { ExportContext } from "../schema/measurements.ts";
import { type MeasurementColumn, RoiDerived } from "./measurement-columns.ts";
import type { Roi } from "../schema/roi.ts";

export class CsvRowWriter {
  private readonly columns: readonly MeasurementColumn[];
  private readonly context: ExportContext;
  // Segmentation-level fields are the same on every row: quoted once.
  private readonly fixed: (string | null)[];

  constructor(columns: readonly MeasurementColumn[], context: ExportContext) {
    this.columns = columns;
    this.context = context;
    this.fixed = columns.map(() => null);
  }

  header(): string {
    return `${this.columns.map((c) => csvField(c.name)).join(",")}\r\n`;
  }

  row(roi: Roi): string {
    let line = "";
    const derived = new RoiDerived(roi);
    for (let i = 0; i < this.columns.length; i++) {
      const column = this.columns[i]!;
      if (i > 0) line += ",";
      if (column.source === "roi") line += csvField(column.value(this.context, roi, derived));
      else line += this.fixed[i] ??= csvField(column.value(this.context, roi, derived));
    }
    return `${line}\r\n`;
  }
}
