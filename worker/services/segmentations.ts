import { and, desc, eq } from "drizzle-orm";
import type { SegmentationRecord } from "../../schema/api-records.ts";
import { segmentations } from "../../schema/db.ts";
import { database } from "../storage/database.ts";
import { type MeasurementState, measurementStates } from "./measurement-state.ts";
import { after, newestFirst, type PageRequest, toPage } from "./pages.ts";

export type Segmentation = typeof segmentations.$inferSelect;

export async function getSegmentation(d1: D1Database, orgId: string, id: string): Promise<Segmentation | null> {
  const [row] = await database(d1)
    .select()
    .from(segmentations)
    .where(and(eq(segmentations.id, id), eq(segmentations.orgId, orgId)))
    .limit(1);
  return row ?? null;
}

export async function listSegmentations(d1: D1Database, orgId: string, imageId: string | undefined, page: PageRequest) {
  const rows = await database(d1)
    .select()
    .from(segmentations)
    .where(and(eq(segmentations.orgId, orgId), imageId ? eq(segmentations.imageId, imageId) : undefined, after(segmentations, page.cursor)))
    .orderBy(...newestFirst(segmentations))
    .limit(page.limit + 1);
  const states = await measurementStates(d1, orgId, rows.slice(0, page.limit));
  return toPage(rows, page.limit, (s) => segmentationView(s, states.get(s.id)!));
}

/** An image's most recent segmentation, whatever made it (so a correction imported after a prediction wins). */
export async function latestSegmentation(d1: D1Database, orgId: string, imageId: string): Promise<Segmentation | null> {
  const [row] = await database(d1)
    .select()
    .from(segmentations)
    .where(and(eq(segmentations.orgId, orgId), eq(segmentations.imageId, imageId)))
    .orderBy(...newestFirst(segmentations))
    .limit(1);
  return row ?? null;
}

function segmentationView(s: Segmentation, measurements: MeasurementState): SegmentationRecord {
  return {
    id: s.id,
    image_id: s.imageId,
    image_name: s.imageName,
    source: s.source,
    model_id: s.modelId,
    model_name: s.modelName,
    model_version: s.modelVersion,
    cell_count: s.roiCount,
    confluency: s.confluency,
    diameter: s.diameter,
    modality: s.modality && s.modalitySource ? { modality: s.modality, source: s.modalitySource } : null,
    diameter_basis: s.diameterSource && s.diameterReason !== null ? { source: s.diameterSource, reason: s.diameterReason } : null,
    width: s.width,
    height: s.height,
    pixel_size:
      s.pixelSizeXUm !== null && s.pixelSizeYUm !== null && s.pixelSizeSource !== null
        ? { x_um: s.pixelSizeXUm, y_um: s.pixelSizeYUm, source: s.pixelSizeSource }
        : null,
    timings: (s.timings ?? null) as SegmentationRecord["timings"],
    measurements,
    created_at: new Date(s.createdAt).toISOString(),
  };
}

/** One segmentation's record, its measurement's state looked up. */
export async function segmentationRecordOf(d1: D1Database, s: Segmentation): Promise<SegmentationRecord> {
  const states = await measurementStates(d1, s.orgId, [s]);
  return segmentationView(s, states.get(s.id)!);
}

/** Records of segmentations (all of one org), their measurements' states looked up together. */
export async function segmentationRecords(d1: D1Database, orgId: string, rows: Segmentation[]): Promise<SegmentationRecord[]> {
  const states = await measurementStates(d1, orgId, rows);
  return rows.map((s) => segmentationView(s, states.get(s.id)!));
}

/** An image's segmentations as rows, newest first, for the dashboard's image page (the API pages through listSegmentations). */
export async function segmentationsOfImage(d1: D1Database, orgId: string, imageId: string): Promise<Segmentation[]> {
  return database(d1)
    .select()
    .from(segmentations)
    .where(and(eq(segmentations.orgId, orgId), eq(segmentations.imageId, imageId)))
    .orderBy(desc(segmentations.createdAt));
}
