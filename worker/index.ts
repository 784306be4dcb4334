import type { Bindings, JobMessage } from "./env.ts";
import { app } from "./app.ts";
import { consumeConversions } from "./consumers/conversions.ts";
import { bufferPulledMessages } from "./queues/local-pull-queue.ts";
import { deleteExpiredSignIns } from "./services/dashboard-sessions.ts";
import { sweepJobs } from "./services/jobs.ts";
import { sweepStorage } from "./services/storage-sweeper.ts";

export default {
  fetch: app.fetch,

  async queue(batch: MessageBatch<JobMessage>, env: Bindings): Promise<void> {
    // Queue names carry an environment prefix (cellseg-staging-conversions ...).
    if (batch.queue.endsWith("-conversions")) return consumeConversions(batch, env);
    if (batch.queue.endsWith("-gpu-jobs")) return bufferPulledMessages(env.DB, batch);
    console.error(`no consumer for queue ${batch.queue}`);
    batch.retryAll();
  },

  async scheduled(_controller: ScheduledController, env: Bindings): Promise<void> {
    // Jobs first: a job it fails leaves outputs for the storage sweep of the same run.
    await sweepJobs(env);
    await sweepStorage(env);
    await deleteExpiredSignIns(env.DB);
  },
} satisfies ExportedHandler<Bindings, JobMessage>;
