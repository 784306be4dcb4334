// The ROI artifact's chunk index: where each chunk lies in the file and which part of the image its
// ROIs start in, so the viewer's outlines for one region come from a ranged read of a few chunks
// instead of the whole artifact (half a million cells are some 50 MB).
//
// The artifact keeps ROIs in raster order (bbox_y never decreases), so the chunks holding the
// ROIs that start in a band of rows are consecutive; a chunk's smallest and largest bbox_x narrow
// that down further at the band's ends. The index is JSON of about 60 bytes a chunk, made once per
// segmentation by reading the artifact through (its reader checks every chunk on the way) and
// stored beside it.

import { type RoiChunkExtent, readRoiArtifact } from "./reader.ts";
import { RoiArtifactError } from "../../schema/roi-artifact.ts";
import type { RoiArtifactHeader } from "../../schema/roi-artifact.ts";

const ROI_ARTIFACT_INDEX_VERSION = 1;

export interface RoiArtifactIndex {
  version: typeof ROI_ARTIFACT_INDEX_VERSION;
  header: RoiArtifactHeader;
  /** The largest bbox_w or bbox_h of any ROI: how far an ROI reaches beyond where it starts. */
  maxExtent: number;
  /** One row per chunk, in file order: offset, bytes, firstIndex, count, minBboxX, maxBboxX, firstBboxY, lastBboxY. */
  chunks: [number, number, number, number, number, number, number, number][];
}

/** Reads the artifact through, checking it, and returns its index. */
export async function indexRoiArtifact(stream: ReadableStream<Uint8Array>): Promise<RoiArtifactIndex> {
  const chunks: RoiArtifactIndex["chunks"] = [];
  let maxExtent = 0;
  const onChunk = (c: RoiChunkExtent) => {
    chunks.push([c.offset, c.bytes, c.firstIndex, c.count, c.minBboxX, c.maxBboxX, c.firstBboxY, c.lastBboxY]);
    maxExtent = Math.max(maxExtent, c.maxExtent);
  };
  const { header, rois } = await readRoiArtifact(stream, { onChunk });
  for await (const _ of rois) {
    // Reading through is the point: onChunk sees every chunk once it has been checked.
  }
  return { version: ROI_ARTIFACT_INDEX_VERSION, header, maxExtent, chunks };
}

/** A region of image pixels, [x0, x1) x [y0, y1). */
export interface PixelRegion {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

/** The consecutive chunks to read for the ROIs whose bounding box starts inside `region`. */
interface ChunkRun {
  /** Byte range in the artifact: offset and length. */
  offset: number;
  length: number;
  firstIndex: number;
  chunkCount: number;
}

/**
 * The run of chunks that holds every ROI whose top-left corner (bbox_x, bbox_y) is in `region`,
 * or null when there is none. The run may hold other ROIs too: its reader filters.
 */
export function chunkRunFor(index: RoiArtifactIndex, region: PixelRegion): ChunkRun | null {
  let first = -1;
  let last = -1;
  for (let i = 0; i < index.chunks.length; i++) {
    const [, , , , minBboxX, maxBboxX, firstBboxY, lastBboxY] = index.chunks[i]!;
    if (firstBboxY >= region.y1) break; // raster order: no later chunk starts above the region's bottom
    if (lastBboxY < region.y0 || maxBboxX < region.x0 || minBboxX >= region.x1) continue;
    if (first < 0) first = i;
    last = i;
  }
  if (first < 0) return null;
  const [offset, , firstIndex] = index.chunks[first]!;
  const [lastOffset, lastBytes] = index.chunks[last]!;
  return { offset, length: lastOffset + lastBytes - offset, firstIndex, chunkCount: last - first + 1 };
}

/** Parses a stored index, refusing anything that is not one (a damaged object reads as no index). */
export function parseRoiArtifactIndex(text: string): RoiArtifactIndex {
  const value = JSON.parse(text) as Partial<RoiArtifactIndex>;
  if (value?.version !== ROI_ARTIFACT_INDEX_VERSION || !Array.isArray(value.chunks) || typeof value.maxExtent !== "number" || !value.header) {
    throw new RoiArtifactError("not an ROI artifact index of this version");
  }
  return value as RoiArtifactIndex;
}
