// The GPU jobs queue as the worker sees it when a runner asks for work: pull one message with a
// visibility timeout, then ack it or hand it back. Deployed, this is Cloudflare Queues' HTTP pull
// consumer; locally (miniflare has no pull consumers) a D1-backed buffer with the same lease,
// ack, retry and visibility-timeout semantics stands in. Callers cannot tell the two apart.
import type { Bindings, JobMessage } from "../env.ts";
import { cloudflarePullQueue } from "./cloudflare-pull-queue.ts";
import { localPullQueue } from "./local-pull-queue.ts";
import type { GpuJobQueue } from "./pull-queue.ts";

export function gpuJobQueue(env: Bindings): GpuJobQueue {
  const send = async (message: JobMessage) => {
    await env.GPU_JOBS.send(message, { contentType: "json" });
  };
  return env.JOB_QUEUE_MODE === "cloudflare" ? cloudflarePullQueue(env, send) : localPullQueue(env.DB, send);
}
