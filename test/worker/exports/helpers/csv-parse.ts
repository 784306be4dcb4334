// An RFC 4180 CSV parser for checking exports: fields separated by commas, records by CRLF,
// quoted fields may hold commas, CR, LF and doubled quotes. Rejects anything malformed.

export function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let i = 0;
  for (;;) {
    let field = "";
    if (text[i] === '"') {
      i++;
      for (;;) {
        if (i >= text.length) throw new Error("CSV: unterminated quoted field");
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        field += text[i++];
      }
    } else {
      while (i < text.length && text[i] !== "," && text[i] !== "\r" && text[i] !== "\n") {
        if (text[i] === '"') throw new Error(`CSV: quote inside an unquoted field at ${i}`);
        field += text[i++];
      }
    }
    record.push(field);
    if (text[i] === ",") {
      i++;
      continue;
    }
    if (text.startsWith("\r\n", i)) {
      i += 2;
      records.push(record);
      record = [];
      if (i === text.length) return records;
      continue;
    }
    if (i === text.length) {
      records.push(record);
      return records;
    }
    throw new Error(`CSV: expected , or CRLF at ${i}`);
  }
}
