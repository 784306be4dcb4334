// Local stand-in for an HTTP pull consumer. Messages still travel through the real (miniflare)
// queue: its push consumer (bufferPulledMessages) parks them in D1, and pulls lease them from
// there with a visibility timeout, exactly as Cloudflare's pull API does.
import { and, eq, lte, sql } from "drizzle-orm";
import { pullQueueMessages } from "../../schema/db.ts";
import type { JobMessage } from "../env.ts";
import { database } from "../storage/database.ts";
import type { GpuJobQueue } from "./pull-queue.ts";

const QUEUE = "gpu-jobs";

export async function bufferPulledMessages(db: D1Database, batch: MessageBatch<JobMessage>): Promise<void> {
  const now = Date.now();
  const rows = batch.messages.map((m) => ({ id: m.id || crypto.randomUUID(), queue: QUEUE, body: m.body, visibleAt: now }));
  if (rows.length) await database(db).insert(pullQueueMessages).values(rows).onConflictDoNothing();
  batch.ackAll();
}

export function localPullQueue(db: D1Database, send: (message: JobMessage) => Promise<void>): GpuJobQueue {
  const orm = database(db);
  return {
    send,
    async pull(visibilityTimeoutMs) {
      const now = Date.now();
      const leaseId = crypto.randomUUID();
      const oldest = orm
        .select({ id: pullQueueMessages.id })
        .from(pullQueueMessages)
        .where(and(eq(pullQueueMessages.queue, QUEUE), lte(pullQueueMessages.visibleAt, now)))
        .orderBy(pullQueueMessages.visibleAt, pullQueueMessages.createdAt)
        .limit(1);
      // One statement: two concurrent pulls can never lease the same message.
      const [row] = await orm
        .update(pullQueueMessages)
        .set({ leaseId, visibleAt: now + visibilityTimeoutMs, attempts: sql`${pullQueueMessages.attempts} + 1` })
        .where(and(sql`${pullQueueMessages.id} = (${oldest})`, lte(pullQueueMessages.visibleAt, now)))
        .returning();
      return row ? { leaseId, body: row.body as JobMessage, attempts: row.attempts } : null;
    },
    async ack(leaseId) {
      await orm.delete(pullQueueMessages).where(eq(pullQueueMessages.leaseId, leaseId));
    },
    async release(leaseId, delaySeconds = 0) {
      await orm
        .update(pullQueueMessages)
        .set({ leaseId: null, visibleAt: Date.now() + delaySeconds * 1000 })
        .where(eq(pullQueueMessages.leaseId, leaseId));
    },
  };
}
