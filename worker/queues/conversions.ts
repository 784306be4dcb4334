// Conversion jobs, consumed inside the worker: probe a completed resumable upload and mark the
// image ready or failed. The job row moves through the same states as every other job.
import { and, eq, sql } from "drizzle-orm";
import { jobs } from "../../schema/db.ts";
import type { Bindings, JobMessage } from "../env.ts";
import { database } from "../services/database.ts";
import { getImage, updateImage } from "../services/images.ts";
import { probeStoredImage } from "../services/uploads.ts";

export async function consumeConversions(batch: MessageBatch<JobMessage>, env: Bindings): Promise<void> {
  const db = database(env.DB);
  for (const message of batch.messages) {
    const [job] = await db
      .update(jobs)
      .set({ status: "STARTED", attempts: sql`${jobs.attempts} + 1`, startedAt: Date.now(), stage: "probing" })
      .where(and(eq(jobs.id, message.body.job_id), eq(jobs.kind, "conversion"), eq(jobs.status, "SUBMITTED")))
      .returning();
    if (!job) {
      message.ack(); // done already, or a duplicate delivery
      continue;
    }
    const finish = (status: "COMPLETED" | "FAILED", reason: string | null) =>
      db.update(jobs).set({ status, reason, finishedAt: Date.now(), progress: 1, stage: "done" }).where(eq(jobs.id, job.id));
    try {
      const image = await getImage(env.DB, job.orgId, job.imageId!);
      if (!image) {
        await finish("FAILED", "Image was deleted before it could be processed");
      } else {
        const probed = await probeStoredImage(env, image);
        await finish(probed.status === "ready" ? "COMPLETED" : "FAILED", probed.uploadError);
      }
      message.ack();
    } catch (error) {
      const reason = `Processing failed: ${error instanceof Error ? error.message : String(error)}`;
      if (job.attempts >= job.maxAttempts) {
        await finish("FAILED", reason);
        if (job.imageId) await updateImage(env.DB, job.imageId, { status: "failed", uploadError: reason }).catch(() => undefined);
        message.ack();
      } else {
        await db.update(jobs).set({ status: "SUBMITTED", reason }).where(eq(jobs.id, job.id));
        message.retry({ delaySeconds: 2 ** job.attempts });
      }
    }
  }
}
