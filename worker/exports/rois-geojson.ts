// rois.geojson, streamed: the features of common/geojson-features.ts (coordinate convention, ring
// orientation and QuPath's properties are described there).
import { FEATURE_COLLECTION_END, FEATURE_COLLECTION_START, GeoJsonFeatureWriter } from "../../common/geojson-features.ts";
import type { ExportContext } from "../../schema/measurements.ts";
import type { MeasurementColumn } from "../../common/measurement-columns.ts";
import type { Roi } from "../../schema/roi.ts";
import type { RoiArtifactContents } from "../../schema/roi-artifact.ts";
import { pullStream, TextChunker } from "./pull-stream.ts";

/**
 * `columns`: the feature properties (schema/measurements.ts); the default columns when absent.
 * `cells`: QuPath cell objects (the cell's outline, the nucleus as nucleusGeometry) instead of detections.
 */
export function roisGeoJson(
  artifact: RoiArtifactContents,
  context: ExportContext,
  columns?: readonly MeasurementColumn[],
  options: { cells?: boolean } = {},
): ReadableStream<Uint8Array> {
  return featureCollection(artifact.rois, context, columns, options);
}

/** A FeatureCollection of the given ROIs; the viewer's outline tiles are one too. */
export function featureCollection(
  rois: AsyncIterable<Roi> | Iterable<Roi>,
  context: ExportContext,
  columns?: readonly MeasurementColumn[],
  options: { cells?: boolean } = {},
): ReadableStream<Uint8Array> {
  async function* document(): AsyncGenerator<Uint8Array> {
    const text = new TextChunker();
    text.push(FEATURE_COLLECTION_START);
    const features = new GeoJsonFeatureWriter(context, columns, options);
    let first = true;
    for await (const roi of rois) {
      const chunk = text.push((first ? "\n" : ",\n") + features.feature(roi));
      first = false;
      if (chunk) yield chunk;
    }
    text.push(FEATURE_COLLECTION_END);
    yield text.flush();
  }
  return pullStream(document());
}
