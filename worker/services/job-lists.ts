// An organization's predictions and trainings, a page at a time (conversions stay the upload's).
import { and, eq, inArray } from "drizzle-orm";
import { jobs, type JobStatus } from "../../schema/db.ts";
import { database } from "../storage/database.ts";
import type { Job } from "./jobs.ts";
import { after, newestFirst, type PageRequest, toPage } from "./pages.ts";

interface JobFilter {
  kind?: "prediction" | "training";
  status?: JobStatus;
  imageId?: string;
}

export async function listJobs<Item>(d1: D1Database, orgId: string, filter: JobFilter, page: PageRequest, view: (job: Job) => Item) {
  const rows = await database(d1)
    .select()
    .from(jobs)
    .where(
      and(
        eq(jobs.orgId, orgId),
        inArray(jobs.kind, filter.kind ? [filter.kind] : ["prediction", "training"]),
        filter.status ? eq(jobs.status, filter.status) : undefined,
        filter.imageId ? eq(jobs.imageId, filter.imageId) : undefined,
        after(jobs, page.cursor),
      ),
    )
    .orderBy(...newestFirst(jobs))
    .limit(page.limit + 1);
  return toPage(rows, page.limit, view);
}
