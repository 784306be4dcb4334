// Where a segmentation's per-cell intensity measurement stands. A prediction measures as it
// segments; an import is measured afterwards by a runner (a `measurement` job, jobs.ts), and until
// then its exports have its geometry and shape columns but no intensities. The record says which,
// so a client knows when to ask for `columns=intensity`, and the export's 400 says why.
import { and, eq, inArray } from "drizzle-orm";
import type { SegmentationRecord } from "../../schema/api-records.ts";
import { jobs, type segmentations as segmentationsTable } from "../../schema/db.ts";
import { database } from "../storage/database.ts";

// The rows' types come from the tables, not from jobs.ts and segmentations.ts: segmentations.ts
// calls this module and jobs.ts calls segmentations.ts, so importing either here made a circle.
type Job = typeof jobs.$inferSelect;
type Segmentation = typeof segmentationsTable.$inferSelect;

export type MeasurementState = SegmentationRecord["measurements"];

type MeasurementJob = Pick<Job, "status" | "reason">;

const IDS_PER_QUERY = 90;

/** The state a segmentation's record shows, from its source and (imports) its measurement job. */
function measurementState(segmentation: Pick<Segmentation, "source">, job: MeasurementJob | undefined): MeasurementState {
  if (segmentation.source !== "import") return { status: "measured", detail: null };
  if (!job) return { status: "not_measured", detail: "Imported before imports were measured: geometry and shape columns only" };
  switch (job.status) {
    case "COMPLETED":
      return { status: "measured", detail: null };
    case "FAILED":
      return { status: "failed", detail: job.reason ?? "The measurement failed" };
    default:
      return { status: "measuring", detail: null };
  }
}

/** The measurement jobs of these segmentations' imports, newest per segmentation, in one query. */
export async function measurementStates(d1: D1Database, orgId: string, segmentations: readonly Segmentation[]): Promise<Map<string, MeasurementState>> {
  const imported = segmentations.filter((s) => s.source === "import").map((s) => s.id);
  const rows = [];
  // D1 binds at most 100 parameters a statement.
  for (let start = 0; start < imported.length; start += IDS_PER_QUERY) {
    rows.push(
      ...(await database(d1)
        .select({ segmentationId: jobs.segmentationId, status: jobs.status, reason: jobs.reason, createdAt: jobs.createdAt })
        .from(jobs)
        .where(and(eq(jobs.orgId, orgId), eq(jobs.kind, "measurement"), inArray(jobs.segmentationId, imported.slice(start, start + IDS_PER_QUERY))))),
    );
  }
  const newest = new Map<string, (typeof rows)[number]>();
  for (const row of rows) {
    const seen = row.segmentationId ? newest.get(row.segmentationId) : undefined;
    if (row.segmentationId && (!seen || row.createdAt > seen.createdAt)) newest.set(row.segmentationId, row);
  }
  return new Map(segmentations.map((s) => [s.id, measurementState(s, newest.get(s.id))]));
}
