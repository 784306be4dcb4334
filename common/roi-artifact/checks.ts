// The invariants of roi-artifact.ts, checked by the writer before it stores anything and by the
// reader on everything it returns, so exports can trust what they iterate.

import type { Roi } from "../../schema/roi.ts";
import { INTENSITY_STATS, type RoiMeasurements } from "../../schema/roi.ts";
import { ROI_ARTIFACT_MAX_CHANNELS, RoiArtifactError } from "../../schema/roi-artifact.ts";
import type { RoiArtifactHeader } from "../../schema/roi-artifact.ts";

const U32_MAX = 0xffffffff;

function isU32(v: number): boolean {
  return Number.isInteger(v) && v >= 0 && v <= U32_MAX;
}

export function checkRoiArtifactHeader(h: RoiArtifactHeader): void {
  const problems: string[] = [];
  if (!isU32(h.imageWidth) || h.imageWidth < 1) problems.push(`image width ${h.imageWidth}`);
  if (!isU32(h.imageHeight) || h.imageHeight < 1) problems.push(`image height ${h.imageHeight}`);
  if (!isU32(h.roiCount)) problems.push(`ROI count ${h.roiCount}`);
  if (!isU32(h.vertexCount)) problems.push(`vertex count ${h.vertexCount}`);
  if (!(h.confluency >= 0 && h.confluency <= 1)) problems.push(`confluency ${h.confluency} (must be 0..1)`);
  if (typeof h.modelName !== "string") problems.push("model name");
  if (typeof h.modelVersion !== "string") problems.push("model version");
  if (
    h.channelNames !== undefined &&
    (!Array.isArray(h.channelNames) || h.channelNames.length > ROI_ARTIFACT_MAX_CHANNELS || h.channelNames.some((n) => typeof n !== "string"))
  )
    problems.push(`channel names (at most ${ROI_ARTIFACT_MAX_CHANNELS} strings)`);
  if (problems.length > 0) throw new RoiArtifactError(`ROI artifact header: invalid ${problems.join(", ")}`);
}

/**
 * Checks one ROI against the header and its predecessor; `expectedIndex` is its position in the
 * file and `previousBboxY` the bbox_y of the ROI before it (0 for the first).
 */
export function checkRoi(roi: Roi, h: RoiArtifactHeader, expectedIndex: number, previousBboxY: number): void {
  const where = `ROI artifact: ROI ${expectedIndex}`;
  if (roi.index !== expectedIndex) throw new RoiArtifactError(`${where} has index ${roi.index}; ROIs must be numbered 0, 1, 2, ... in order`);
  checkOutline(roi, h, where);
  if (roi.bbox_y < previousBboxY) {
    throw new RoiArtifactError(`${where}: bbox_y ${roi.bbox_y} is above the previous ROI's ${previousBboxY}; ROIs must be in raster order`);
  }
  const channels = h.channelNames?.length ?? 0;
  checkStats(roi.intensity, channels, `${where}: intensities`);
  if (!h.cells) {
    if (roi.cell !== undefined) throw new RoiArtifactError(`${where}: has a cell, but the header announces none`);
    return;
  }
  const cell = roi.cell;
  if (!cell) throw new RoiArtifactError(`${where}: has no cell, but the header announces cells`);
  checkOutline(cell, h, `${where}'s cell`);
  if (
    cell.bbox_x > roi.bbox_x ||
    cell.bbox_y > roi.bbox_y ||
    cell.bbox_x + cell.bbox_w < roi.bbox_x + roi.bbox_w ||
    cell.bbox_y + cell.bbox_h < roi.bbox_y + roi.bbox_h
  )
    throw new RoiArtifactError(`${where}: its cell's bounding box does not hold the nucleus's`);
  checkStats(cell.cytoplasmIntensity, channels, `${where}'s cytoplasm intensities`);
}

/** Measurements, box and polygon of a nucleus or its cell: the box inside the image, the polygon's extent the box. */
function checkOutline(o: RoiMeasurements & { polygon: Int32Array }, h: RoiArtifactHeader, where: string): void {
  if (!Number.isInteger(o.area_px) || o.area_px < 0) throw new RoiArtifactError(`${where}: area_px ${o.area_px} is not a non-negative integer`);
  for (const v of [o.perimeter_px, o.centroid_x, o.centroid_y]) {
    if (!Number.isFinite(v)) throw new RoiArtifactError(`${where}: perimeter and centroid must be finite numbers`);
  }
  const { bbox_x, bbox_y, bbox_w, bbox_h } = o;
  if (![bbox_x, bbox_y, bbox_w, bbox_h].every(isU32) || bbox_w < 1 || bbox_h < 1 || bbox_x + bbox_w > h.imageWidth || bbox_y + bbox_h > h.imageHeight) {
    throw new RoiArtifactError(`${where}: bounding box (${bbox_x}, ${bbox_y}, ${bbox_w}, ${bbox_h}) is not inside the ${h.imageWidth}x${h.imageHeight} image`);
  }
  const p = o.polygon;
  if (!(p instanceof Int32Array) || p.length < 6 || p.length % 2 !== 0) {
    throw new RoiArtifactError(`${where}: polygon must be an Int32Array of at least 3 (x, y) vertices`);
  }
  // The length is checked just above: at least 6 and even, so every p[i + 1] below is in range.
  let minX = p[0]!,
    maxX = p[0]!,
    minY = p[1]!,
    maxY = p[1]!;
  for (let i = 2; i < p.length; i += 2) {
    const x = p[i]!,
      y = p[i + 1]!;
    if (x < minX) minX = x;
    if (x > maxX) maxX = x;
    if (y < minY) minY = y;
    if (y > maxY) maxY = y;
  }
  if (minX !== bbox_x || minY !== bbox_y || maxX !== bbox_x + bbox_w || maxY !== bbox_y + bbox_h) {
    throw new RoiArtifactError(
      `${where}: polygon spans x ${minX}..${maxX}, y ${minY}..${maxY} but the bounding box is (${bbox_x}, ${bbox_y}, ${bbox_w}, ${bbox_h})`,
    );
  }
}

/** INTENSITY_STATS for each of the header's channels, or nothing without channels. */
function checkStats(stats: Float64Array | undefined, channels: number, what: string): void {
  const ok = channels > 0 ? stats instanceof Float64Array && stats.length === channels * INTENSITY_STATS.length : stats === undefined;
  if (!ok)
    throw new RoiArtifactError(
      `${what} must be ${channels * INTENSITY_STATS.length} numbers (${INTENSITY_STATS.length} for each of the header's ${channels} channels)${channels === 0 ? ", none without channels" : ""}`,
    );
}
