// Small label images written as text, one character per pixel: "." is background, any other
// character an object; equal characters are the same object.

export function grid(rows: string[]): { width: number; height: number; labels: Uint32Array } {
  const [first] = rows;
  if (first === undefined) throw new Error("a grid needs at least one row");
  const width = first.length,
    height = rows.length;
  const labels = new Uint32Array(width * height);
  rows.forEach((row, y) => [...row].forEach((c, x) => (labels[y * width + x] = c === "." ? 0 : c.charCodeAt(0))));
  return { width, height, labels };
}

/** The label image as the same kind of text: the labels 1, 2, 3, ... become "a", "b", "c", .... */
export function picture(labels: Uint32Array, width: number): string[] {
  const rows: string[] = [];
  for (let at = 0; at < labels.length; at += width) {
    rows.push(Array.from(labels.subarray(at, at + width), (k) => (k === 0 ? "." : String.fromCharCode(96 + k))).join(""));
  }
  return rows;
}
