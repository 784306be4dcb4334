// Crafted annotation files of issue 24: each one is within the import's size, object and vertex
// limits, and each one asked the importer for minutes to hours of CPU or hundreds of megabytes of
// heap. Built byte for byte here, independent of the parsers under test; the regression tests
// (test/worker/annotations/hostile.test.ts) and the timing script (scripts/bench-hostile-inputs.ts)
// both use them.

import { CENTRAL_HEADER, END, LOCAL_HEADER, ZIP64_END, ZIP64_LOCATOR } from "../../../worker/zip-records.ts";
import { encodeTiff } from "./tiff-writer.ts";

const encoder = new TextEncoder();

/**
 * A comb: a square wave of `vertices` vertices (a multiple of 4) whose teeth run from one image
 * height above the image to one below it, laid from x = 2 * width down to x = -width (the most
 * the coordinate limit allows), right to left so a naive scanline meets the crossings of every row
 * in descending order. Every row of the image crosses vertices / 2 edges.
 */
export function combOutline(vertices: number, width: number, height: number): Float64Array {
  const teeth = vertices / 4;
  const pitch = (3 * width) / teeth;
  const top = -height + 0.25,
    bottom = 2 * height - 0.25;
  const out = new Float64Array(2 * vertices);
  for (let t = 0; t < teeth; t++) {
    const right = 2 * width - t * pitch,
      left = right - pitch / 2;
    out.set([right, top, right, bottom, left, bottom, left, top], 8 * t);
  }
  return out;
}

/** The comb as one GeoJSON Polygon feature, coordinates to 4 decimals (about 1.35 MB at 100,000 vertices). */
export function combGeoJson(vertices: number, width: number, height: number): Uint8Array {
  const p = combOutline(vertices, width, height);
  const positions: string[] = [];
  for (let i = 0; i < p.length; i += 2) positions.push(`[${+p[i].toFixed(4)},${+p[i + 1].toFixed(4)}]`);
  positions.push(positions[0]);
  return encoder.encode(`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[${positions.join(",")}]]}}]}`);
}

/**
 * The comb as one ImageJ subpixel polygon .roi (RoiDecoder's layout: 64-byte header, 16-bit
 * relative coordinates, then float coordinates; more than 65,535 vertices go in the SIZE field at
 * byte 18 with the 16-bit count left 0).
 */
export function combRoi(vertices: number, width: number, height: number): Uint8Array {
  const p = combOutline(vertices, width, height);
  const n = vertices;
  const bytes = new Uint8Array(64 + 12 * n);
  const view = new DataView(bytes.buffer);
  bytes.set([0x49, 0x6f, 0x75, 0x74]); // "Iout"
  view.setUint16(4, 228);
  view.setUint8(6, 0); // polygon
  const left = -width,
    top = -height;
  view.setInt16(8, top);
  view.setInt16(10, left);
  view.setInt16(12, 2 * height);
  view.setInt16(14, 2 * width);
  view.setUint16(16, n > 0xffff ? 0 : n);
  if (n > 0xffff) view.setInt32(18, n);
  view.setInt16(50, 128); // SUB_PIXEL_RESOLUTION
  for (let i = 0; i < n; i++) {
    view.setInt16(64 + 2 * i, Math.floor(p[2 * i]) - left);
    view.setInt16(64 + 2 * n + 2 * i, Math.floor(p[2 * i + 1]) - top);
    view.setFloat32(64 + 4 * n + 4 * i, p[2 * i]);
    view.setFloat32(64 + 8 * n + 4 * i, p[2 * i + 1]);
  }
  return bytes;
}

/** `count` GeoJSON features, each a rectangle covering the whole `width` x `height` image. */
export function fullImageRectangles(count: number, width: number, height: number): Uint8Array {
  const one = `{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[[0,0],[${width},0],[${width},${height}],[0,${height}],[0,0]]]}}`;
  return encoder.encode(`{"type":"FeatureCollection","features":[${new Array(count).fill(one).join(",")}]}`);
}

/**
 * A 16-bit label TIFF (uncompressed) with `labels` labels, each on one pixel near the top edge and
 * one near the bottom edge, mirrored left to right: every object's bounding box spans the image's
 * height and on average half its width, so passes over each object's box cost labels x pixels / 2.
 */
export function labelsAtTopAndBottom(width: number, height: number, labels: number): Uint8Array {
  const values = new Uint16Array(width * height);
  for (let k = 1; k <= labels; k++) {
    const x = (k - 1) % width,
      y = Math.floor((k - 1) / width);
    values[y * width + x] = k;
    values[(height - 1 - y) * width + (width - 1 - x)] = k;
  }
  return encodeTiff([{ width, height, samplesPerPixel: 1, values, kind: "uint16" }]);
}

/** A small ImageJ rectangle ROI (x, y, w, h integers), 64 bytes. */
export function rectangleRoi(x: number, y: number, w: number, h: number): Uint8Array {
  const bytes = new Uint8Array(64);
  const view = new DataView(bytes.buffer);
  bytes.set([0x49, 0x6f, 0x75, 0x74]);
  view.setUint16(4, 228);
  view.setUint8(6, 1);
  view.setInt16(8, y);
  view.setInt16(10, x);
  view.setInt16(12, y + h);
  view.setInt16(14, x + w);
  return bytes;
}

/**
 * Raw deflate data (RFC 1951) that inflates to `data` after `emptyBlocks` empty stored blocks:
 * each empty block is 5 bytes (a non-final stored block header, LEN 0, NLEN 0xFFFF) and inflates
 * to nothing, so an inflater's output limit never stops the reading of them.
 */
export function deflateAfterEmptyBlocks(emptyBlocks: number, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 * emptyBlocks + 5 + data.length);
  out.set([0x00, 0x00, 0x00, 0xff, 0xff]);
  for (let filled = 5; filled < 5 * emptyBlocks; filled *= 2) out.copyWithin(filled, 0, Math.min(filled, 5 * emptyBlocks - filled));
  const last = 5 * emptyBlocks;
  out.set([0x01, data.length & 0xff, data.length >> 8, ~data.length & 0xff, (~data.length >> 8) & 0xff], last);
  out.set(data, last + 5);
  return out;
}

/**
 * A ZIP archive whose central directory lists `entries` entries that all name the one local header
 * at offset 0 (PKWARE APPNOTE 6.3 records; ZIP64 end records when entries exceed 65,535). The
 * entry's data is `data`, deflated (method 8) or stored (method 0).
 */
export function zipOfOverlappingEntries(entries: number, name: string, data: Uint8Array, method: 0 | 8, inflatedSize: number): Uint8Array {
  const nameBytes = encoder.encode(name);
  const local = 30 + nameBytes.length;
  const central = 46 + nameBytes.length;
  const directoryAt = local + data.length;
  const zip64 = entries > 0xffff;
  const size = directoryAt + entries * central + (zip64 ? 56 + 20 : 0) + 22;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setUint32(0, LOCAL_HEADER, true);
  view.setUint16(4, 20, true);
  view.setUint16(8, method, true);
  view.setUint32(18, data.length, true);
  view.setUint32(22, inflatedSize, true);
  view.setUint16(26, nameBytes.length, true);
  out.set(nameBytes, 30);
  out.set(data, local);
  for (let i = 0; i < entries; i++) {
    const at = directoryAt + i * central;
    if (i > 0) {
      out.copyWithin(at, directoryAt, directoryAt + central);
      continue;
    }
    view.setUint32(at, CENTRAL_HEADER, true);
    view.setUint16(at + 4, 20, true);
    view.setUint16(at + 6, 20, true);
    view.setUint16(at + 10, method, true);
    view.setUint32(at + 20, data.length, true);
    view.setUint32(at + 24, inflatedSize, true);
    view.setUint16(at + 28, nameBytes.length, true);
    view.setUint32(at + 42, 0, true); // the local header: the same one for every entry
    out.set(nameBytes, at + 46);
  }
  let at = directoryAt + entries * central;
  if (zip64) {
    view.setUint32(at, ZIP64_END, true);
    view.setBigUint64(at + 4, 44n, true);
    view.setBigUint64(at + 24, BigInt(entries), true);
    view.setBigUint64(at + 32, BigInt(entries), true);
    view.setBigUint64(at + 40, BigInt(entries * central), true);
    view.setBigUint64(at + 48, BigInt(directoryAt), true);
    view.setUint32(at + 56, ZIP64_LOCATOR, true);
    view.setBigUint64(at + 64, BigInt(at), true);
    view.setUint32(at + 72, 1, true);
    at += 76;
  }
  view.setUint32(at, END, true);
  view.setUint16(at + 8, zip64 ? 0xffff : entries, true);
  view.setUint16(at + 10, zip64 ? 0xffff : entries, true);
  view.setUint32(at + 12, entries * central, true);
  view.setUint32(at + 16, zip64 ? 0xffffffff : directoryAt, true);
  return out;
}

/** One Polygon feature whose single ring has `positions` positions [1,2] (6 bytes each): past every limit, in one JSON value. */
export function oneRingOfPositions(positions: number): Uint8Array {
  const head = encoder.encode('[{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[');
  const tail = encoder.encode("[1,2]]]}}]");
  const one = encoder.encode("[1,2],");
  const out = new Uint8Array(head.length + one.length * (positions - 1) + tail.length);
  out.set(head);
  const end = head.length + one.length * (positions - 1);
  for (let at = head.length; at < end; at += one.length) out.set(one, at);
  out.set(tail, end);
  return out;
}

/**
 * `features` Polygon features of `vertices` vertices each, at the documented limits (50 x 100,000 =
 * 5,000,000 vertices) in under 40 MiB: circles of radius 20 traced with two-digit integer
 * coordinates ("[43,27]," is 8 bytes), each vertex repeated, on an image of at least 128 x 128.
 */
export function featuresAtTheVertexLimit(features: number, vertices: number): Uint8Array {
  const parts: string[] = [];
  for (let f = 0; f < features; f++) {
    const cx = 30 + (f % 10) * 5,
      cy = 30 + Math.floor(f / 10) * 8;
    const ring: string[] = [];
    for (let i = 0; i < vertices; i++) {
      const t = (2 * Math.PI * i) / vertices;
      ring.push(`[${Math.round(cx + 20 * Math.cos(t))},${Math.round(cy + 20 * Math.sin(t))}]`);
    }
    parts.push(`{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[${ring.join(",")}]]}}`);
  }
  return encoder.encode(`{"type":"FeatureCollection","features":[${parts.join(",")}]}`);
}
