// rois.geojson: a GeoJSON FeatureCollection (RFC 7946) with one Polygon per ROI, in image pixel
// coordinates: x to the right, y down, (0, 0) the top-left corner of the top-left pixel, vertices
// on pixel corners (the same outline as the ImageJ ROIs). QuPath reads exactly this convention and
// imports features whose properties carry `objectType` ("detection") and, optionally,
// `classification` ({ name }).
//
// Ring orientation. RFC 7946 wants exterior rings counter-clockwise, which it defines by the
// coordinates as numbers (right-hand rule). We make the shoelace sum
//   S = sum over i of (x[i] * y[i+1] - x[i+1] * y[i])
// positive, which is counter-clockwise in a y-up frame. Drawn on an image, where y points down,
// such a ring runs clockwise on screen. QuPath (through JTS) accepts either orientation, so the
// RFC's rule decides.

import type { Roi } from "../../schema/roi.ts";
import type { RoiArtifactContents } from "../../schema/roi-artifact.ts";
import { MEASUREMENT_COLUMNS, roiId } from "../../schema/measurements.ts";
import type { ExportContext, MeasurementValue } from "../../schema/measurements.ts";
import { pullStream, TextChunker } from "./pull-stream.ts";

/** Twice the signed area of the polygon by the shoelace formula, on (x, y) as given. */
export function shoelaceSum(polygon: Int32Array): number {
  let sum = 0;
  const n = polygon.length;
  for (let i = 0; i < n; i += 2) {
    const j = (i + 2) % n;
    sum += polygon[i] * polygon[j + 1] - polygon[j] * polygon[i + 1];
  }
  return sum;
}

/** The exterior ring as GeoJSON text: counter-clockwise by the RFC's rule and closed. */
function ringJson(polygon: Int32Array): string {
  const n = polygon.length / 2;
  const forward = shoelaceSum(polygon) > 0;
  let out = "[";
  for (let k = 0; k <= n; k++) {
    const v = forward ? k % n : (n - k) % n;
    out += (k > 0 ? ",[" : "[") + polygon[2 * v] + "," + polygon[2 * v + 1] + "]";
  }
  return out + "]";
}

function featureJson(context: ExportContext, roi: Roi): string {
  const properties: Record<string, MeasurementValue | { name: string }> = {};
  for (const column of MEASUREMENT_COLUMNS) properties[column.name] = column.value(context, roi);
  properties.objectType = "detection";
  // QuPath reads `classification` as a class object; an absent one means "unclassified", while a
  // null may not parse in every QuPath version, so the key appears once a cell type exists.
  const cellType = properties.cell_type;
  if (typeof cellType === "string" && cellType !== "") properties.classification = { name: cellType };
  return (
    `{"type":"Feature","id":${JSON.stringify(roiId(context.segmentationId, roi.index))},` +
    `"geometry":{"type":"Polygon","coordinates":[${ringJson(roi.polygon)}]},` +
    `"properties":${JSON.stringify(properties)}}`
  );
}

export function roisGeoJson(artifact: RoiArtifactContents, context: ExportContext): ReadableStream<Uint8Array> {
  async function* document(): AsyncGenerator<Uint8Array> {
    const text = new TextChunker();
    text.push('{"type":"FeatureCollection","features":[');
    let first = true;
    for await (const roi of artifact.rois) {
      const chunk = text.push((first ? "\n" : ",\n") + featureJson(context, roi));
      first = false;
      if (chunk) yield chunk;
    }
    text.push("\n]}\n");
    yield text.flush();
  }
  return pullStream(document());
}
