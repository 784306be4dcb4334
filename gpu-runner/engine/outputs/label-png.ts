// The label mask as a 16-bit grayscale PNG (0 = background, ROI index + 1 = its pixels), the
// layout of the training data's labels/ folders. Deflated with Node's native zlib into one IDAT
// holding every row as filter type 0 then its big-endian samples (the framing is the service's:
// schema/png-chunks.ts): fast-png's JavaScript deflate took 75–107 ms of a fresh `npm run segment`
// process on a 1024×1024 mask, this 13–17 ms.
import { deflateSync } from "node:zlib";
import { label16Header, PNG_SIGNATURE, pngChunk } from "../../../schema/png-chunks.ts";

export function encodeLabelPng(labels: Uint32Array, width: number, height: number): Uint8Array {
  if (labels.length !== width * height) throw new Error(`labels hold ${labels.length} values, expected ${width}x${height}`);
  const rowBytes = 1 + 2 * width;
  const raw = new Uint8Array(height * rowBytes); // filter bytes stay 0
  for (let y = 0; y < height; y++) {
    for (let x = 0, at = y * rowBytes + 1, i = y * width; x < width; x++, at += 2, i++) {
      const v = labels[i]!;
      if (v > 65_535) throw new Error(`label ${v} does not fit a 16-bit PNG (more than 65535 masks)`);
      raw[at] = v >>> 8;
      raw[at + 1] = v & 0xff;
    }
  }
  const chunks = [label16Header(width, height), pngChunk("IDAT", deflateSync(raw, { level: 3 })), pngChunk("IEND", new Uint8Array(0))];
  const out = new Uint8Array(PNG_SIGNATURE.length + chunks.reduce((n, c) => n + c.length, 0));
  out.set(PNG_SIGNATURE);
  let at = PNG_SIGNATURE.length;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
