// One CSV field, the same in the worker's measurements.csv and the CLI's writer: RFC 4180 quoting
// (a field holding a comma, quote, CR or LF is quoted with its quotes doubled) and formula
// neutralising; numbers are rounded by formatMeasurement (measurements.ts). Spreadsheets run a
// cell that starts with = + - @ (or tab/CR, which some strip first) as a formula, and names come from users, so such a text cell gets a leading apostrophe
// (OWASP's advice for CSV injection). Numbers are written as numbers: -1.5 stays -1.5.
import { formatMeasurement, type MeasurementValue } from "./measurements.ts";

const NEEDS_QUOTES = /[",\r\n]/;
const STARTS_A_FORMULA = /^[=+\-@\t\r]/;

export function csvField(value: MeasurementValue): string {
  if (value === null) return "";
  if (typeof value === "number") return formatMeasurement(value) ?? "";
  const text = STARTS_A_FORMULA.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}
