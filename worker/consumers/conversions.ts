// Conversion jobs, consumed inside the worker: probe a completed resumable upload and mark the
// image ready or failed. The job moves through the one state machine (services/jobs.ts) like every
// other job: the consumer starts an attempt under a lease, so an isolate that dies mid-probe leaves
// a lease the sweep takes back, and the job is tried again or FAILED with its image.
import type { Bindings, JobMessage } from "../env.ts";
import { getImage } from "../services/images.ts";
import { completeStatement, failAttempt, JobFaultError, startAttempt } from "../services/jobs.ts";
import { settings } from "../services/settings.ts";
import { probeStoredImage } from "../services/uploads.ts";

const CONVERSION_HOLDER = "worker";

export async function consumeConversions(batch: MessageBatch<JobMessage>, env: Bindings): Promise<void> {
  for (const message of batch.messages) {
    // Done, running under a live lease, or a duplicate: the row decides, the message was only a
    // wake-up (a lease that runs out is the sweep's to take back).
    const job = await startAttempt(env.DB, message.body.job_id, CONVERSION_HOLDER, settings(env).leaseSeconds * 1000, ["conversion"]);
    if (!job) {
      message.ack();
      continue;
    }
    const token = job.leaseToken!;
    try {
      const image = await getImage(env.DB, job.orgId, job.imageId!);
      if (!image) throw new JobFaultError("input", "Image was deleted before it could be processed");
      const probed = await probeStoredImage(env, image);
      if (probed.status === "ready") await completeStatement(env.DB, job.id, token, { result: null });
      else await failAttempt(env, job.id, token, probed.uploadError ?? "The image could not be read", "input");
    } catch (error) {
      const fault = error instanceof JobFaultError ? error.fault : "service";
      const reason = error instanceof JobFaultError ? error.message : `Processing failed: ${error instanceof Error ? error.message : String(error)}`;
      await failAttempt(env, job.id, token, reason, fault, 2 ** job.attempts);
    }
    message.ack();
  }
}
