// Two segmentations of one image side by side, for the dashboard's comparison page: each one's
// outlines to draw over the image's preview and, where the image has an imported annotation, its
// AP@0.5 and AP@0.75 against that annotation, scored as training and `client compare` score
// (common/scoring/average-precision.ts, Cellpose's definition). Both label images are rendered a
// row at a time from the stored ROIs (common/geometry/roi-raster.ts), so neither is held whole:
// the work grows with the image's pixels, which a budget bounds before any is read.
import { LabelRowRenderer } from "../../common/geometry/roi-raster.ts";
import { OverlapCounts } from "../../common/scoring/average-precision.ts";
import type { PreviewIndex } from "../../schema/preview-tiles.ts";
import type { Bindings } from "../env.ts";
import type { Image } from "./images.ts";
import type { Segmentation } from "./segmentations.ts";
import { openRoiArtifact } from "./stored-rois.ts";

/** The most pixels an AP is computed for here: about a second of the worker's time. */
const MAX_SCORED_PIXELS = 32 * 2 ** 20;
/** The most cells, and outline corners, one side of the page draws; beyond, the viewer draws them tile by tile. */
const MAX_DRAWN_CELLS = 20_000;
const MAX_DRAWN_CORNERS = 500_000;
/** The preview level drawn under the outlines is the coarsest at least this wide (or the image's width). */
const DRAWN_WIDTH = 1200;

export interface Scores {
  ap50: number;
  ap75: number;
}

/**
 * The annotation the pair is scored against: the image's most recent import other than the two,
 * else the one of the two that is an import (the other is then scored against it), else none.
 */
export function referenceFor(segmentations: readonly Segmentation[], pair: readonly Segmentation[]): Segmentation | null {
  const imports = segmentations.filter((s) => s.source === "import").sort((a, b) => b.createdAt - a.createdAt);
  return imports.find((s) => !pair.some((p) => p.id === s.id)) ?? pair.find((s) => s.source === "import") ?? null;
}

/** Why a pair on this image is not scored here, or null when it is. */
export function whyNotScored(image: Pick<Image, "width" | "height">): string | null {
  const pixels = (image.width ?? 0) * (image.height ?? 0);
  if (pixels <= MAX_SCORED_PIXELS) return null;
  return `AP is computed here for images up to ${MAX_SCORED_PIXELS / 2 ** 20} MP; this one has ${(pixels / 2 ** 20).toFixed(0)} MP: \`npm run client -- compare\` scores it`;
}

/** AP@0.5 and AP@0.75 of `predicted` against `truth`, both segmentations of one image within MAX_SCORED_PIXELS. */
export async function scoreAgainst(env: Bindings, truth: Segmentation, predicted: Segmentation): Promise<Scores> {
  const { width, height } = truth;
  if (width * height > MAX_SCORED_PIXELS) throw new Error(`scoreAgainst: ${width}x${height} is past MAX_SCORED_PIXELS; check whyNotScored first`);
  const truthRois = await openRoiArtifact(env, truth);
  const predictedRois = await openRoiArtifact(env, predicted).catch(async (error) => {
    await truthRois.cancel();
    throw error;
  });
  try {
    // Labels are roi.index + 1 (roi-raster.ts), so the headers' counts bound them.
    const counts = new OverlapCounts(truthRois.header.roiCount, predictedRois.header.roiCount);
    const truthRows = new LabelRowRenderer(width, height, truthRois.rois);
    const predictedRows = new LabelRowRenderer(width, height, predictedRois.rois);
    const truthRow = new Uint32Array(width);
    const predictedRow = new Uint32Array(width);
    while ((await truthRows.next(truthRow)) && (await predictedRows.next(predictedRow))) counts.addRow(truthRow, predictedRow);
    const [ap50 = 0, ap75 = 0] = counts.averagePrecision([0.5, 0.75]).ap;
    return { ap50, ap75 };
  } finally {
    await Promise.all([truthRois.cancel(), predictedRois.cancel()]);
  }
}

/**
 * Every cell's outline as one SVG path in image pixels (relative moves between corners, which keep
 * it short), or null past MAX_DRAWN_CELLS cells or MAX_DRAWN_CORNERS corners.
 */
export async function outlinePath(env: Bindings, segmentation: Segmentation): Promise<string | null> {
  if (segmentation.roiCount > MAX_DRAWN_CELLS) return null;
  const contents = await openRoiArtifact(env, segmentation);
  const parts: string[] = [];
  let corners = 0;
  try {
    for await (const { polygon } of contents.rois) {
      corners += polygon.length / 2;
      if (corners > MAX_DRAWN_CORNERS) return null;
      let d = `M${polygon[0]} ${polygon[1]}`;
      // Corners come in x, y pairs: i + 1 is in range while i is.
      for (let i = 2; i < polygon.length; i += 2) d += `l${polygon[i]! - polygon[i - 2]!} ${polygon[i + 1]! - polygon[i - 1]!}`;
      parts.push(`${d}z`);
    }
  } finally {
    await contents.cancel();
  }
  return parts.join("");
}

/** A preview tile placed in image pixels. */
export interface PlacedTile {
  href: string;
  x: number;
  y: number;
  width: number;
  height: number;
}

/** The tiles of the coarsest preview level at least DRAWN_WIDTH wide (or the image's width), placed over the image. */
export function previewUnderlay(imageId: string, index: PreviewIndex): PlacedTile[] {
  const wide = Math.min(DRAWN_WIDTH, index.width);
  const chosen = index.levels.reduce((best, level, i) => (level.width >= wide ? i : best), 0);
  const level = index.levels[chosen];
  if (!level) return [];
  const tiles: PlacedTile[] = [];
  const side = index.tile * level.factor;
  for (let row = 0; row < level.rows; row++) {
    for (let column = 0; column < level.columns; column++) {
      tiles.push({
        href: `/dashboard/api/images/${imageId}/preview/${chosen}/${column}/${row}`,
        x: column * side,
        y: row * side,
        width: Math.min(index.tile, level.width - column * index.tile) * level.factor,
        height: Math.min(index.tile, level.height - row * index.tile) * level.factor,
      });
    }
  }
  return tiles;
}
