// GeoJSON as QuPath exports it: a FeatureCollection, a bare array of Features (older QuPath), or a
// single Feature, with Polygon or MultiPolygon geometries in image pixel coordinates (x right,
// y down, (0, 0) the top-left corner of the image; QuPath's and our export's convention). One
// feature is one object; its rings are filled by the even-odd rule, so a polygon's inner rings are
// holes, and a MultiPolygon's polygons all belong to the object. Features are drawn in file order.
// Properties are not read. The structure is walked at the fixed depths GeoJSON defines, never by
// recursion over what the file nests.

import { AnnotationImportError } from "./errors.ts";
import { MAX_GEOJSON_DEPTH } from "./limits.ts";
import type { OutlineCollector } from "./outlines.ts";

/** First non-blank character (after a UTF-8 byte order mark) opens a JSON object or array. */
export function looksLikeJson(bytes: Uint8Array): boolean {
  let i = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  while (i < bytes.length && (bytes[i] === 0x20 || bytes[i] === 0x09 || bytes[i] === 0x0a || bytes[i] === 0x0d)) i++;
  return bytes[i] === 0x7b || bytes[i] === 0x5b; // { or [
}

function invalid(detail: string): AnnotationImportError {
  return new AnnotationImportError("invalid_content", `GeoJSON: ${detail}`);
}

export function collectGeoJson(bytes: Uint8Array, collector: OutlineCollector): void {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new AnnotationImportError("unreadable", "GeoJSON unreadable: the file is not UTF-8 text");
  }
  checkNesting(text);
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new AnnotationImportError("unreadable", `GeoJSON unreadable: not valid JSON (${(error as Error).message})`);
  }
  for (const [index, feature] of features(document).entries()) {
    const where = `feature ${index + 1}`;
    if (!isObject(feature) || feature.type !== "Feature") throw invalid(`${where} is not a Feature`);
    const geometry = feature.geometry;
    if (!isObject(geometry)) throw invalid(`${where} has no geometry`);
    let polygons: unknown[];
    if (geometry.type === "Polygon") polygons = [geometry.coordinates];
    else if (geometry.type === "MultiPolygon") polygons = arrayOf(geometry.coordinates, `${where}'s coordinates`);
    else throw invalid(`${where} has a ${String(geometry.type)} geometry; only Polygon and MultiPolygon outline objects`);
    const rings: Float64Array[] = [];
    for (const polygon of polygons) for (const ring of arrayOf(polygon, `${where}'s polygon`)) rings.push(ringOf(ring, where));
    collector.add({ rings, where });
  }
}

function features(document: unknown): unknown[] {
  if (Array.isArray(document)) return document;
  if (isObject(document) && document.type === "FeatureCollection") return arrayOf(document.features, "the FeatureCollection's features");
  if (isObject(document) && document.type === "Feature") return [document];
  throw invalid("expected a FeatureCollection, an array of Features or a Feature");
}

/** A linear ring [[x, y], ...] as interleaved coordinates, without the repeated closing position. */
function ringOf(ring: unknown, where: string): Float64Array {
  const positions = arrayOf(ring, `${where}'s ring`);
  let n = positions.length;
  const out = new Float64Array(2 * n);
  for (let i = 0; i < n; i++) {
    const p = positions[i];
    if (!Array.isArray(p) || p.length < 2 || typeof p[0] !== "number" || typeof p[1] !== "number") {
      throw invalid(`${where} has a position that is not [x, y]`);
    }
    out[2 * i] = p[0];
    out[2 * i + 1] = p[1];
  }
  if (n > 1 && out[0] === out[2 * n - 2] && out[1] === out[2 * n - 1]) n--;
  return out.subarray(0, 2 * n);
}

function arrayOf(value: unknown, what: string): unknown[] {
  if (!Array.isArray(value)) throw invalid(`${what} is not an array`);
  return value;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Refuses absurd nesting before JSON.parse builds it (brackets inside strings do not count). */
function checkNesting(text: string): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > MAX_GEOJSON_DEPTH)
        throw new AnnotationImportError(
          "limit_exceeded",
          `GeoJSON nests deeper than ${MAX_GEOJSON_DEPTH} levels; a FeatureCollection of MultiPolygons needs 8`,
        );
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
}
