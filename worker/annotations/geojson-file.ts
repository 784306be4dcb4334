// GeoJSON as QuPath exports it: a FeatureCollection, a bare array of Features (older QuPath), or a
// single Feature, with Polygon or MultiPolygon geometries in image pixel coordinates (x right,
// y down, (0, 0) the top-left corner of the image; QuPath's and our export's convention). One
// feature is one object; its rings are filled by the even-odd rule, so a polygon's inner rings are
// holes, and a MultiPolygon's polygons all belong to the object. Features are drawn in file order.
// Properties are not read.
//
// The file is read as it is walked (json-reader.ts), never parsed whole: JSON.parse of a 40 MiB
// file of positions grew the heap by 545 MB, of a file at the vertex limit by 414 MB, where a
// Worker has 128 MB. Only one feature's coordinates are held at a time, and at most
// MAX_IMPORT_VERTICES_PER_OBJECT of them (past that they are counted, not kept), so memory is the
// file, the label image and one object, whatever the file holds. The structure is walked at the
// fixed depths GeoJSON defines; coordinates (whose depth says what they are only once the
// geometry's type is known, which may come after them) are read into a small tree of rings.
// Errors are those of JSON.parse followed by a walk of the result, except that a feature that is
// wrong is reported as soon as it is read, even when the JSON after it is broken too, and that a
// member read here ("type", "features", "geometry", "coordinates") may appear once per object.
// JSON.parse keeps a repeated member's last occurrence, but a walk acts on each as it comes: taking
// the last would undo the work done on the ones before (a label image cleared and every budget
// reset per repeated "features": 7,000 of them in 98 KB held the worker 9.4 s). RFC 8259 leaves
// repeated names' meaning open, so a repeat is refused as ambiguous.

import { AnnotationImportError } from "./errors.ts";
import { JsonDepthError, JsonReader, JsonSyntaxError } from "./json-reader.ts";
import { MAX_GEOJSON_DEPTH, MAX_IMPORT_VERTICES_PER_OBJECT } from "./limits.ts";
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
  checkUtf8(bytes);
  const reader = new JsonReader(bytes, MAX_GEOJSON_DEPTH);
  try {
    readDocument(reader, collector);
    reader.end();
  } catch (error) {
    if (error instanceof JsonSyntaxError) throw new AnnotationImportError("unreadable", `GeoJSON unreadable: not valid JSON (${error.message})`);
    if (error instanceof JsonDepthError) {
      throw new AnnotationImportError("limit_exceeded", `GeoJSON nests deeper than ${MAX_GEOJSON_DEPTH} levels; a FeatureCollection of MultiPolygons needs 8`);
    }
    throw error;
  }
}

/** Refuses bytes that are not UTF-8, a megabyte at a time (the decoded text is dropped). */
function checkUtf8(bytes: Uint8Array): void {
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  const slice = 1024 * 1024;
  try {
    for (let at = 0; at < bytes.length; at += slice) decoder.decode(bytes.subarray(at, at + slice), { stream: true });
    decoder.decode();
  } catch {
    throw new AnnotationImportError("unreadable", "GeoJSON unreadable: the file is not UTF-8 text");
  }
}

function readDocument(reader: JsonReader, collector: OutlineCollector): void {
  if (reader.startsArray()) {
    readFeatures(reader, collector);
    return;
  }
  // A FeatureCollection or a Feature: which one, its "type" member says, and members come in any
  // order. "features" is read as it comes once the type is known; else its place is kept and it is
  // read after the object.
  reader.openObject();
  const members = new MembersReadOnce("the top-level object");
  let type: string | undefined;
  let featuresAt = -1;
  let geometryAt = -1;
  let drawn = false;
  for (let i = 0; reader.moreMembers(i); i++) {
    const key = members.read(reader.key());
    if (key === "type") type = readType(reader);
    else if (key === "features" && type === "FeatureCollection" && reader.startsArray()) {
      readFeatures(reader, collector);
      drawn = true;
    } else if (key === "features" || key === "geometry") {
      if (key === "features") featuresAt = reader.at;
      else geometryAt = reader.at;
      reader.skipValue();
    } else reader.skipValue();
  }
  const end = reader.at;
  if (type === "FeatureCollection") {
    if (drawn) return;
    if (featuresAt < 0) throw invalid("the FeatureCollection's features is not an array");
    reader.at = featuresAt;
    if (!reader.startsArray()) throw invalid("the FeatureCollection's features is not an array");
    readFeatures(reader, collector);
    reader.at = end;
    return;
  }
  if (type !== "Feature") throw invalid("expected a FeatureCollection, an array of Features or a Feature");
  let geometry: Geometry | null = null;
  if (geometryAt >= 0) {
    reader.at = geometryAt;
    geometry = readGeometry(reader, "feature 1");
    reader.at = end;
  }
  addFeature(collector, "feature 1", type, geometry);
}

/** The members this walk reads; each may appear once in an object (see the top of this file for why). */
const READ_MEMBERS = new Set(["type", "features", "geometry", "coordinates"]);

/** Refuses an object's second occurrence of a member the walk reads. */
class MembersReadOnce {
  private readonly what: string;
  private readonly seen = new Set<string>();
  constructor(what: string) {
    this.what = what;
  }
  /** The member's name, once it is known to be its first occurrence (names not read pass as they are). */
  read(key: string | null): string | null {
    if (key === null || !READ_MEMBERS.has(key)) return key;
    if (this.seen.has(key)) throw invalid(`${this.what} has more than one "${key}" member; a repeated member is ambiguous`);
    this.seen.add(key);
    return key;
  }
}

function readFeatures(reader: JsonReader, collector: OutlineCollector): void {
  reader.openArray();
  for (let i = 0; reader.moreElements(i); i++) {
    const where = `feature ${i + 1}`;
    if (!reader.startsObject()) {
      reader.skipValue(); // its nesting, and its syntax, are refused first, as JSON.parse would
      throw invalid(`${where} is not a Feature`);
    }
    reader.openObject();
    const members = new MembersReadOnce(where);
    let type: string | undefined;
    let geometry: Geometry | null = null;
    for (let m = 0; reader.moreMembers(m); m++) {
      const key = members.read(reader.key());
      if (key === "type") type = readType(reader);
      else if (key === "geometry") geometry = readGeometry(reader, where);
      else reader.skipValue();
    }
    addFeature(collector, where, type, geometry);
  }
}

/** A "type" member's value: the string, or what String() of another value would say (for messages). */
function readType(reader: JsonReader): string {
  if (reader.startsString()) return reader.string(256) ?? "(a very long string)";
  if (reader.startsObject()) {
    reader.skipValue();
    return "[object Object]";
  }
  if (reader.startsArray()) {
    reader.skipValue();
    return "(an array)";
  }
  return String(reader.skipValue());
}

// ---- Geometries ---------------------------------------------------------------------------------

interface Geometry {
  type: string | undefined;
  coordinates: Coordinates | undefined;
}

/**
 * Coordinates read before it is known what they are: null for a value that is not an array, an
 * array of further coordinates, a ring (an array whose first value is a position [x, y]), or a leaf
 * (a non-empty array whose first value is not an array, such as a position itself). That is enough
 * to tell, once the type is known, a well-formed polygon from any malformed one, with the message
 * a walk of the parsed document gave.
 */
type Coordinates = null | Coordinates[] | Ring | typeof LEAF;
const LEAF = Symbol("leaf");

class Ring {
  /** Interleaved x, y of the positions kept (all of them unless `truncated`). */
  xy = new Float64Array(32);
  /** Positions read, and kept. */
  count = 0;
  kept = 0;
  /** A value in it is not a position [x, y] (numbers). */
  bad = false;
  firstX = 0;
  firstY = 0;
  lastX = 0;
  lastY = 0;

  /** Vertices, without a closing position that repeats the first. */
  get vertices(): number {
    return this.count > 1 && this.firstX === this.lastX && this.firstY === this.lastY ? this.count - 1 : this.count;
  }

  add(x: number, y: number, keep: boolean): void {
    if (this.count === 0) {
      this.firstX = x;
      this.firstY = y;
    }
    this.lastX = x;
    this.lastY = y;
    this.count++;
    if (!keep) return;
    if (2 * this.kept === this.xy.length) {
      const grown = new Float64Array(2 * this.xy.length);
      grown.set(this.xy);
      this.xy = grown;
    }
    this.xy[2 * this.kept] = x;
    this.xy[2 * this.kept + 1] = y;
    this.kept++;
  }
}

/**
 * One feature's coordinates as they are read: the vertices of its finished rings and the arrays
 * read. Positions are kept only while the feature's vertices can still be within the limit; a
 * feature past it is refused for that, so what it holds is never needed.
 */
class CoordinateBudget {
  readonly where: string;
  vertices = 0;
  arrays = 0;
  truncated = false;
  constructor(where: string) {
    this.where = where;
  }
  array(): void {
    // A polygon of at most MAX_IMPORT_VERTICES_PER_OBJECT vertices has fewer rings and polygons than that.
    if (++this.arrays > MAX_IMPORT_VERTICES_PER_OBJECT) {
      throw new AnnotationImportError(
        "limit_exceeded",
        `${this.where}'s coordinates hold more than ${MAX_IMPORT_VERTICES_PER_OBJECT.toLocaleString("en-US")} arrays; an object may have at most ${MAX_IMPORT_VERTICES_PER_OBJECT.toLocaleString("en-US")} vertices`,
      );
    }
  }
}

function readGeometry(reader: JsonReader, where: string): Geometry | null {
  if (!reader.startsObject()) {
    reader.skipValue();
    return null;
  }
  reader.openObject();
  const members = new MembersReadOnce(`${where}'s geometry`);
  const geometry: Geometry = { type: undefined, coordinates: undefined };
  for (let i = 0; reader.moreMembers(i); i++) {
    const key = members.read(reader.key());
    if (key === "type") geometry.type = readType(reader);
    else if (key === "coordinates") geometry.coordinates = readCoordinates(reader, new CoordinateBudget(where));
    else reader.skipValue();
  }
  return geometry;
}

function readCoordinates(reader: JsonReader, budget: CoordinateBudget): Coordinates {
  const first = reader.firstInArray();
  if (first === -1) {
    reader.skipValue();
    return null;
  }
  budget.array();
  if (first !== 0x5b && first !== 0x5d) {
    reader.skipValue();
    return LEAF;
  }
  if (reader.arrayStartsWithPosition()) return readRing(reader, budget);
  const items: Coordinates[] = [];
  reader.openArray();
  for (let i = 0; reader.moreElements(i); i++) items.push(readCoordinates(reader, budget));
  return items;
}

function readRing(reader: JsonReader, budget: CoordinateBudget): Ring {
  const ring = new Ring();
  reader.openArray();
  for (let i = 0; reader.moreElements(i); i++) {
    if (reader.position()) {
      addPosition(ring, budget, reader.x, reader.y);
      continue;
    }
    if (!reader.arrayStartsWithNumber()) {
      ring.bad = true;
      reader.skipValue();
      continue;
    }
    reader.openArray();
    reader.moreElements(0);
    const x = reader.number();
    let y = Number.NaN;
    let position = false;
    if (reader.moreElements(1)) {
      position = reader.startsNumber();
      if (position) y = reader.number();
      else reader.skipValue();
      for (let k = 2; reader.moreElements(k); k++) reader.skipValue(); // a third coordinate (z) or more
    }
    if (position) addPosition(ring, budget, x, y);
    else ring.bad = true;
  }
  budget.vertices += ring.vertices;
  return ring;
}

function addPosition(ring: Ring, budget: CoordinateBudget, x: number, y: number): void {
  // Kept while the vertices so far, this one included, can still be within the limit (the ring's
  // last position may yet turn out to close it).
  const keep = !budget.truncated && budget.vertices + ring.count < MAX_IMPORT_VERTICES_PER_OBJECT + 1;
  if (!keep) budget.truncated = true;
  ring.add(x, y, keep);
}

// ---- From a feature to an object ----------------------------------------------------------------

function addFeature(collector: OutlineCollector, where: string, type: string | undefined, geometry: Geometry | null): void {
  if (type !== "Feature") throw invalid(`${where} is not a Feature`);
  if (!geometry) throw invalid(`${where} has no geometry`);
  let polygons: Coordinates[];
  if (geometry.type === "Polygon") polygons = [geometry.coordinates ?? null];
  else if (geometry.type === "MultiPolygon") polygons = itemsOf(geometry.coordinates ?? null, `${where}'s coordinates`);
  else throw invalid(`${where} has a ${String(geometry.type)} geometry; only Polygon and MultiPolygon outline objects`);
  const rings: Float64Array[] = [];
  let vertices = 0;
  let truncated = false;
  for (const polygon of polygons) {
    for (const ring of itemsOf(polygon, `${where}'s polygon`)) {
      const r = ringOf(ring, where);
      rings.push(r.xy);
      vertices += r.vertices;
      truncated ||= r.truncated;
    }
  }
  if (truncated) {
    throw new AnnotationImportError(
      "limit_exceeded",
      `${where} has ${vertices} vertices; an object may have at most ${MAX_IMPORT_VERTICES_PER_OBJECT.toLocaleString("en-US")}`,
    );
  }
  collector.add({ rings, where });
}

/** The values of an array, as far as an error needs them: a leaf's first value is not an array, a ring's first is a position. */
function itemsOf(value: Coordinates, what: string): Coordinates[] {
  if (value === null) throw invalid(`${what} is not an array`);
  if (value === LEAF) return [null];
  if (value instanceof Ring) return [LEAF];
  return value;
}

/** A linear ring [[x, y], ...] as interleaved coordinates, without the repeated closing position. */
function ringOf(value: Coordinates, where: string): { xy: Float64Array; vertices: number; truncated: boolean } {
  if (value === null) throw invalid(`${where}'s ring is not an array`);
  if (Array.isArray(value) && value.length === 0) return { xy: new Float64Array(0), vertices: 0, truncated: false };
  if (!(value instanceof Ring) || value.bad) throw invalid(`${where} has a position that is not [x, y]`);
  const vertices = value.vertices;
  const truncated = value.kept < value.count;
  return { xy: value.xy.subarray(0, 2 * (truncated ? value.kept : vertices)), vertices, truncated };
}
