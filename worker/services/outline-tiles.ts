// The viewer's outlines, a square of the image at a time. A segmentation of half a million cells
// is too much to send whole (its rois.geojson is hundreds of megabytes), so the viewer asks for
// the cells of the tiles in view, and each tile is a ranged read of the ROI artifact found through
// its chunk index (common/roi-artifact/index.ts), built here the first time it is needed.
//
// A cell belongs to the one tile that holds the top-left corner of its bounding box, so tiles
// never repeat a cell; the viewer also asks for the tiles up to `max_extent` left of and above
// the view, where the cells reaching into it start.

import { artifactIndexKey } from "../../schema/storage-keys.ts";
import { chunkRunFor, indexRoiArtifact, parseRoiArtifactIndex, type PixelRegion, type RoiArtifactIndex } from "../../common/roi-artifact/index.ts";
import { readRoiArtifactChunks } from "../../common/roi-artifact/reader.ts";
import { RoiArtifactError } from "../../schema/roi-artifact.ts";
import type { Roi } from "../../schema/roi.ts";
import type { Bindings } from "../env.ts";
import { HttpError } from "../errors.ts";
import { measurementColumns } from "../../common/measurement-columns.ts";
import { exportContext, withHeader } from "../exports/index.ts";
import { featureCollection } from "../exports/rois-geojson.ts";
import { getSegmentation, type Segmentation } from "./segmentations.ts";
import { damagedArtifact } from "./stored-rois.ts";

/** Image pixels on a side of one outline tile. */
const OUTLINE_TILE = 1024;
/**
 * The most of the artifact one tile may read. The chunks of a band of rows span the image's width,
 * so a tile of a very wide, dense image reads more than its own cells; 8 MiB is some 80,000 cells,
 * a second of decoding at most.
 */
const OUTLINE_TILE_MAX_BYTES = 8 * 1024 * 1024;

interface OutlineGrid {
  tile: number;
  columns: number;
  rows: number;
  roi_count: number;
  /** The largest width or height of a cell, in pixels. */
  max_extent: number;
}

/** The artifact's index, made and stored on first use. */
async function artifactIndex(env: Bindings, segmentation: Segmentation): Promise<RoiArtifactIndex> {
  const key = artifactIndexKey(segmentation.artifactKey);
  const stored = await env.BUCKET.get(key);
  if (stored) {
    try {
      return parseRoiArtifactIndex(await stored.text());
    } catch {
      // A damaged index is made again below.
    }
  }
  const artifact = await env.BUCKET.get(segmentation.artifactKey);
  if (!artifact) throw new HttpError(404, `Segmentation ${segmentation.id} has no stored ROIs`);
  let index: RoiArtifactIndex;
  try {
    index = await indexRoiArtifact(artifact.body);
  } catch (error) {
    if (error instanceof RoiArtifactError) damagedArtifact(segmentation, error);
    throw error;
  }
  await env.BUCKET.put(key, JSON.stringify(index), { httpMetadata: { contentType: "application/json" } });
  // A deletion that swept the segmentation's prefix while the index was being made would miss it.
  if (!(await getSegmentation(env.DB, segmentation.orgId, segmentation.id))) await env.BUCKET.delete(key);
  return index;
}

export async function outlineGrid(env: Bindings, segmentation: Segmentation): Promise<OutlineGrid> {
  const index = await artifactIndex(env, segmentation);
  return {
    tile: OUTLINE_TILE,
    columns: Math.ceil(segmentation.width / OUTLINE_TILE),
    rows: Math.ceil(segmentation.height / OUTLINE_TILE),
    roi_count: index.header.roiCount,
    max_extent: index.maxExtent,
  };
}

async function* startingIn(rois: AsyncGenerator<Roi>, region: PixelRegion): AsyncGenerator<Roi> {
  for await (const roi of rois) {
    if (roi.bbox_y >= region.y1) break; // raster order: the rest start lower
    if (roi.bbox_x >= region.x0 && roi.bbox_x < region.x1 && roi.bbox_y >= region.y0) yield roi;
  }
}

/** The cells starting in one tile, as a GeoJSON FeatureCollection with every measurement column as properties. */
export async function outlineTile(env: Bindings, segmentation: Segmentation, column: number, row: number): Promise<ReadableStream<Uint8Array>> {
  const columns = Math.ceil(segmentation.width / OUTLINE_TILE);
  const rows = Math.ceil(segmentation.height / OUTLINE_TILE);
  if (column >= columns || row >= rows) {
    throw new HttpError(404, `Segmentation ${segmentation.id} has no outline tile ${column}/${row}: it has ${columns} x ${rows} of ${OUTLINE_TILE} px`);
  }
  const index = await artifactIndex(env, segmentation);
  const region = { x0: column * OUTLINE_TILE, y0: row * OUTLINE_TILE, x1: (column + 1) * OUTLINE_TILE, y1: (row + 1) * OUTLINE_TILE };
  const run = chunkRunFor(index, region);
  // Every column the segmentation has (shape, calibrated, intensities, cells'), for the viewer's cell panel.
  const context = withHeader(exportContext(segmentation), index.header);
  const properties = measurementColumns(context);
  if (!run) return featureCollection([], context, properties);
  if (run.length > OUTLINE_TILE_MAX_BYTES) {
    throw new HttpError(
      422,
      `Outline tile ${column}/${row} would read ${run.length} bytes of stored ROIs, more than the ${OUTLINE_TILE_MAX_BYTES} a tile may; download rois.geojson or masks.tif instead`,
    );
  }
  const artifact = await env.BUCKET.get(segmentation.artifactKey, { range: { offset: run.offset, length: run.length } });
  if (!artifact) throw new HttpError(404, `Segmentation ${segmentation.id} has no stored ROIs`);
  // Breaking off at the tile's bottom returns the reader, which cancels the rest of the ranged read.
  return featureCollection(startingIn(readRoiArtifactChunks(artifact.body, index.header, run.firstIndex, run.chunkCount), region), context, properties);
}
