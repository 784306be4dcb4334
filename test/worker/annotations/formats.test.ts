// What each annotation format imports as. Pictures are label images written one character per
// pixel ("." background, "a" the first object in raster order, "b" the second, ...).

import { encode as encodePng } from "fast-png";
import { Zip, ZipDeflate, zipSync } from "fflate";
import { describe, expect, it } from "vitest";
import { importAnnotation } from "../../../worker/annotations/index.ts";
import { encodeTiff } from "../../fixtures/tiff-writer.ts";
import { ROI_TYPE, roiFile, type RoiSpec } from "./helpers/imagej-roi-builder.ts";
import { grid, picture } from "./helpers/label-grid.ts";

function png16(width: number, height: number, labels: ArrayLike<number>): Uint8Array {
  return encodePng({ width, height, data: Uint16Array.from(labels), depth: 16, channels: 1 });
}

function geojson(document: unknown): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(document));
}

function polygonFeature(...rings: number[][][]): unknown {
  return { type: "Feature", geometry: { type: "Polygon", coordinates: rings.map((r) => [...r, r[0]]) }, properties: { objectType: "detection" } };
}

/** A ROI Manager archive as Java's ZipOutputStream writes it: deflated entries with data descriptors. */
function roiManagerZip(specs: RoiSpec[]): Uint8Array {
  const parts: Uint8Array[] = [];
  const zip = new Zip((error, data) => {
    if (error) throw error;
    parts.push(data);
  });
  specs.forEach((spec, i) => {
    const entry = new ZipDeflate(`${String(i + 1).padStart(4, "0")}-cell.roi`, { level: 6 });
    zip.add(entry);
    entry.push(roiFile(spec), true);
  });
  zip.end();
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

describe("label images", () => {
  it("every non-zero value is one object, whatever the values; objects are numbered in raster order", () => {
    const { width, height, labels } = grid(["......", ".ZZ.q.", ".ZZ.q.", "...qq."]);
    const withLarge = Uint32Array.from(labels, (v) => (v === "q".charCodeAt(0) ? 40_000 : v));
    const imported = importAnnotation(png16(width, height, withLarge), width, height);
    expect(imported.format).toBe("label-image");
    expect(picture(imported.labels, width)).toEqual(["......", ".aa.b.", ".aa.b.", "...bb."]);
    expect(imported.rois.map((r) => r.area_px)).toEqual([4, 4]);
  });

  it("reads a label image whose pixel data inflates past 64 KiB (workerd's zlib grows its output in 64 KiB steps)", () => {
    // 320 x 256 16-bit, as dsb2018's label PNGs: 164,096 inflated bytes. A 16 x 16 block per object.
    const width = 320,
      height = 256;
    const labels = new Uint16Array(width * height);
    for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) labels[y * width + x] = x % 32 < 16 && y % 32 < 16 ? 1 + (y >> 5) * 10 + (x >> 5) : 0;
    const imported = importAnnotation(png16(width, height, labels), width, height);
    expect(imported.rois).toHaveLength(80);
    expect(imported.rois.every((r) => r.area_px === 256)).toBe(true);
  });

  it("reads 8-bit PNGs", () => {
    const { width, height, labels } = grid(["x..", "..y"]);
    const file = encodePng({ width, height, data: Uint8Array.from(labels), depth: 8, channels: 1 });
    expect(picture(importAnnotation(file, width, height).labels, width)).toEqual(["a..", "..b"]);
  });

  it.each(["uint8", "uint16", "uint32"] as const)("reads %s TIFFs, deflated", (kind) => {
    const top = kind === "uint8" ? 200 : kind === "uint16" ? 60_000 : 16_000_000;
    const values = [0, top, top, 0, 3, 0];
    const file = encodeTiff([{ width: 3, height: 2, samplesPerPixel: 1, values, kind, compression: "deflate" }]);
    expect(picture(importAnnotation(file, 3, 2).labels, 3)).toEqual([".aa", ".b."]);
  });

  it("an object in two pieces keeps its largest 8-connected piece, as the engine's masks do", () => {
    const { width, height, labels } = grid(["k....k", "..kk..", "..kk..", "m....k"]);
    expect(picture(importAnnotation(png16(width, height, labels), width, height).labels, width)).toEqual(["......", "..aa..", "..aa..", "b....."]);
  });

  it("a hole is kept; an object inside the hole keeps its pixels", () => {
    const { width, height, labels } = grid(["rrrrr.ssss", "r...r.s..s", "r.n.r.ssss", "r...r.....", "rrrrr....."]);
    expect(picture(importAnnotation(png16(width, height, labels), width, height).labels, width)).toEqual([
      "aaaaa.bbbb",
      "a...a.b..b",
      "a.c.a.bbbb",
      "a...a.....",
      "aaaaa.....",
    ]);
  });
});

describe("ImageJ ROIs", () => {
  it("a polygon with integer vertices covers the pixels whose centres lie inside", () => {
    const imported = importAnnotation(roiFile({ type: ROI_TYPE.polygon, vertices: [0, 0, 6, 0, 0, 6] }), 7, 6);
    expect(imported.format).toBe("imagej-roi");
    expect(picture(imported.labels, 7)).toEqual(["aaaaa..", "aaaa...", "aaa....", "aa.....", "a......", "......."]);
  });

  it("a subpixel polygon is read at its float coordinates, not its rounded ones", () => {
    const vertices = [0.6, 0.6, 3.4, 0.6, 3.4, 2.4, 0.6, 2.4];
    expect(picture(importAnnotation(roiFile({ type: ROI_TYPE.polygon, vertices, subPixel: true }), 5, 3).labels, 5)).toEqual([".....", ".aa..", "....."]);
    expect(picture(importAnnotation(roiFile({ type: ROI_TYPE.polygon, vertices }), 5, 3).labels, 5)).toEqual(["aaa..", "aaa..", "....."]);
  });

  it("freehand and traced ROIs are outlines like polygons", () => {
    for (const type of [ROI_TYPE.freehand, ROI_TYPE.traced]) {
      const imported = importAnnotation(roiFile({ type, vertices: [1, 0, 3, 0, 3, 2, 1, 2] }), 4, 3);
      expect(picture(imported.labels, 4)).toEqual([".aa.", ".aa.", "...."]);
    }
  });

  it("a rectangle covers its box; a subpixel one its float box", () => {
    expect(picture(importAnnotation(roiFile({ type: ROI_TYPE.rect, box: [1, 1, 3, 2] }), 5, 4).labels, 5)).toEqual([".....", ".aaa.", ".aaa.", "....."]);
    expect(picture(importAnnotation(roiFile({ type: ROI_TYPE.rect, box: [0.8, 1.2, 1.6, 2.5], subPixel: true }), 5, 4).labels, 5)).toEqual([
      ".....",
      ".a...",
      ".a...",
      ".a...",
    ]);
  });

  it("an oval covers the pixels whose centres lie inside the ellipse inscribed in its bounds", () => {
    const imported = importAnnotation(roiFile({ type: ROI_TYPE.oval, box: [2, 1, 10, 6] }), 14, 8);
    const expected: string[] = [];
    for (let y = 0; y < 8; y++) {
      let row = "";
      for (let x = 0; x < 14; x++) row += ((x + 0.5 - 7) / 5) ** 2 + ((y + 0.5 - 4) / 3) ** 2 < 1 ? "a" : ".";
      expected.push(row);
    }
    expect(picture(imported.labels, 14)).toEqual(expected);
  });

  it("a ROI Manager archive (deflated entries, data descriptors) gives one object per ROI; a later ROI wins shared pixels", () => {
    const file = roiManagerZip([
      { type: ROI_TYPE.rect, box: [0, 0, 4, 3] },
      { type: ROI_TYPE.rect, box: [2, 1, 4, 3] },
      { type: ROI_TYPE.polygon, vertices: [7, 0, 8, 0, 8, 1, 7, 1] },
    ]);
    const imported = importAnnotation(file, 8, 4);
    expect(imported.format).toBe("imagej-roi-zip");
    expect(picture(imported.labels, 8)).toEqual(["aaaa...b", "aacccc..", "aacccc..", "..cccc.."]);
  });

  it("stored archives and folders inside them read too", () => {
    const file = zipSync({ "cells/0001.roi": roiFile({ type: ROI_TYPE.rect, box: [1, 0, 1, 1] }) }, { level: 0 });
    expect(picture(importAnnotation(file, 3, 1).labels, 3)).toEqual([".a."]);
  });
});

describe("GeoJSON", () => {
  const square = (x: number, y: number, s: number) => [
    [x, y],
    [x + s, y],
    [x + s, y + s],
    [x, y + s],
  ];

  it("a FeatureCollection of polygons, in image pixel coordinates", () => {
    const file = geojson({ type: "FeatureCollection", features: [polygonFeature(square(4, 1, 2)), polygonFeature(square(0, 0, 2))] });
    const imported = importAnnotation(file, 6, 3);
    expect(imported.format).toBe("geojson");
    expect(picture(imported.labels, 6)).toEqual(["aa....", "aa..bb", "....bb"]);
  });

  it("a bare array of features, as older QuPath versions export", () => {
    expect(picture(importAnnotation(geojson([polygonFeature(square(1, 0, 1))]), 3, 1).labels, 3)).toEqual([".a."]);
  });

  it("holes are honoured: an inner ring leaves its pixels out; a feature inside another's hole keeps its pixels", () => {
    const ring = polygonFeature(square(0, 0, 5), square(1, 1, 3));
    const inside = polygonFeature(square(2, 2, 1));
    const holed = polygonFeature(square(6, 0, 4), square(7, 1, 2));
    expect(picture(importAnnotation(geojson([ring, inside, holed]), 10, 5).labels, 10)).toEqual([
      "aaaaa.bbbb",
      "a...a.b..b",
      "a.c.a.b..b",
      "a...a.bbbb",
      "aaaaa.....",
    ]);
  });

  it("a MultiPolygon is one object; in separate pieces it keeps the largest", () => {
    const multi = { type: "Feature", geometry: { type: "MultiPolygon", coordinates: [[[...square(0, 0, 1), [0, 0]]], [[...square(3, 0, 2), [3, 0]]]] } };
    expect(picture(importAnnotation(geojson({ type: "FeatureCollection", features: [multi] }), 5, 2).labels, 5)).toEqual(["...aa", "...aa"]);
  });

  it("the part of an object outside the image is cut off", () => {
    expect(picture(importAnnotation(geojson([polygonFeature(square(-2, -2, 4))]), 3, 3).labels, 3)).toEqual(["aa.", "aa.", "..."]);
  });

  // The file is read as it is walked, never parsed whole (geojson-file.ts); it reads what JSON.parse would.
  const text = (s: string) => new TextEncoder().encode(s);
  const two = ["aa..", "aa..", "..bb", "..bb"];

  it("members in any order: features before the collection's type, coordinates before the geometry's type", () => {
    const features = '[{"geometry":{"coordinates":[[[0,0],[2,0],[2,2],[0,2],[0,0]]],"type":"Polygon"},"type":"Feature"},';
    const second = '{"properties":{"a":[1,{"b":null}]},"type":"Feature","geometry":{"type":"Polygon","coordinates":[[[2,2],[4,2],[4,4],[2,4]]]}}]';
    expect(picture(importAnnotation(text(`{"features":${features}${second},"type":"FeatureCollection"}`), 4, 4).labels, 4)).toEqual(two);
    expect(picture(importAnnotation(text(`{"type":"FeatureCollection","features":${features}${second}}`), 4, 4).labels, 4)).toEqual(two);
    const feature = '{"geometry":{"type":"Polygon","coordinates":[[[1,1],[3,1],[3,3],[1,3]]]},"type":"Feature","features":[5]}';
    expect(picture(importAnnotation(text(feature), 4, 4).labels, 4)).toEqual(["....", ".aa.", ".aa.", "...."]);
  });

  it("a member the walk reads may appear once per object: a repeat is refused as ambiguous (JSON.parse would keep the last)", () => {
    const a = '[{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[[0,0],[2,0],[2,2],[0,2]]]}}]';
    const b = '[{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[[2,2],[4,2],[4,4],[2,4]]]}}]';
    const refused = (file: string) => () => importAnnotation(text(file), 4, 4);
    expect(refused(`{"type":"FeatureCollection","features":${a},"features":${b}}`)).toThrow(
      'GeoJSON: the top-level object has more than one "features" member; a repeated member is ambiguous',
    );
    expect(refused(`{"features":${a},"type":"FeatureCollection","type":"Feature"}`)).toThrow('the top-level object has more than one "type" member');
    const coordinates = '{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[[0,0],[2,0],[2,2],[0,2]]],"coordinates":[[[2,2],[4,2],[4,4],[2,4]]]}}';
    expect(refused(coordinates)).toThrow(`GeoJSON: feature 1's geometry has more than one "coordinates" member`);
    const geometry = '{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[[0,0],[2,0],[2,2]]]}}';
    expect(refused(`[${geometry.replace('"geometry"', '"geometry":null,"geometry"')}]`)).toThrow('GeoJSON: feature 1 has more than one "geometry" member');
    // Members the walk does not read (properties, ids, foreign members) may repeat as JSON allows.
    const properties = `{"type":"Feature","properties":{},"properties":{"a":1},"id":1,"id":2,"geometry":{"type":"Polygon","coordinates":[[[0,0],[2,0],[2,2],[0,2]]]}}`;
    expect(picture(importAnnotation(text(properties), 4, 4).labels, 4)).toEqual(["aa..", "aa..", "....", "...."]);
  });

  it("JSON's escapes, whitespace, number forms, a byte order mark and third coordinates read as JSON.parse reads them", () => {
    const file = text(
      '\ufeff { "typ\\u0065" : "Feature\\u0043ollection" ,\n\t"features" : [ { "type":"Feature", "properties": {"name": "c\\"\\u00e9ll\\n", "\u2603": [1e-5, -0.0, true]},\r\n' +
        ' "geometry": {"type": "Polygon", "coordinates": [ [ [ 0.5e0 , -1E+0, 7 ], [2.5, -1, 7], [2.50, 2000e-3], [5E-1, 2.0] ] ] } } ] }',
    );
    expect(picture(importAnnotation(file, 4, 3).labels, 4)).toEqual(["aa..", "aa..", "...."]);
  });

  it("a feature of more than 100,000 vertices is refused however its rings are split", () => {
    const ring = (n: number, x: number) => Array.from({ length: n }, (_, i) => [x + Math.cos((2 * Math.PI * i) / n), 2 + Math.sin((2 * Math.PI * i) / n)]);
    const multi = { type: "Feature", geometry: { type: "MultiPolygon", coordinates: [[ring(60_000, 2)], [ring(40_001, 5)]] } };
    expect(() => importAnnotation(geojson([multi]), 8, 4)).toThrow("feature 1 has 100001 vertices; an object may have at most 100,000");
    // Closing positions are not vertices: two closed rings of 50,001 positions are 100,000 vertices.
    const closed = (n: number, x: number) => [...ring(n - 1, x), ring(n - 1, x)[0]];
    const atLimit = { type: "Feature", geometry: { type: "Polygon", coordinates: [closed(50_001, 2), closed(50_001, 5)] } };
    expect(importAnnotation(geojson([atLimit]), 8, 4).rois).toHaveLength(1);
  });
});
