// How the client writes sizes, durations and tables for people.
import type { ImageRecord } from "../schema/api-records.ts";
import { describePixelSize } from "../schema/image-formats/calibration.ts";

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

export function formatSeconds(ms: number): string {
  const s = ms / 1000;
  return s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

/** Left-aligned columns separated by two spaces, a header and a rule under it. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

/**
 * An image's pixel size and where it came from ("0.325 µm (OME-XML)"), or why the file gave none
 * (a resolution set aside: the upload's warning), so nobody reads µm columns without knowing whence.
 */
export function formatPixelSize(image: Pick<ImageRecord, "pixel_size" | "pixel_size_warning">): string {
  const size = image.pixel_size;
  if (size) return describePixelSize(size.x_um, size.y_um, size.source);
  const why = image.pixel_size_warning;
  return why ? `none (${why[0]!.toLowerCase()}${why.slice(1)})` : "none in the file";
}
