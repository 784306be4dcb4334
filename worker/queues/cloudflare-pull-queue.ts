// Cloudflare Queues' HTTP pull consumer API (POST .../messages/pull and .../messages/ack), used by
// deployed environments. The worker calls it on the runner's behalf, so runners never hold a
// Cloudflare credential.
import type { Bindings, JobMessage } from "../env.ts";
import type { GpuJobQueue } from "./pull-queue.ts";

interface PullResponse {
  success: boolean;
  errors?: { message: string }[];
  result?: { messages?: { lease_id: string; body: string | JobMessage; attempts: number }[] };
}

export function cloudflarePullQueue(env: Bindings, send: (message: JobMessage) => Promise<void>): GpuJobQueue {
  if (!env.CF_ACCOUNT_ID || !env.CF_QUEUES_API_TOKEN || !env.GPU_QUEUE_ID) {
    throw new Error("JOB_QUEUE_MODE=cloudflare needs CF_ACCOUNT_ID, CF_QUEUES_API_TOKEN and GPU_QUEUE_ID");
  }
  const base = `https://api.cloudflare.com/client/v4/accounts/${env.CF_ACCOUNT_ID}/queues/${env.GPU_QUEUE_ID}/messages`;
  const call = async (path: "pull" | "ack", body: unknown): Promise<PullResponse> => {
    const response = await fetch(`${base}/${path}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${env.CF_QUEUES_API_TOKEN}`, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    const json = (await response.json()) as PullResponse;
    if (!response.ok || !json.success) throw new Error(`Queues ${path} failed: ${response.status} ${json.errors?.map((e) => e.message).join("; ")}`);
    return json;
  };
  return {
    send,
    async pull(visibilityTimeoutMs) {
      const json = await call("pull", { batch_size: 1, visibility_timeout_ms: visibilityTimeoutMs });
      const message = json.result?.messages?.[0];
      if (!message) return null;
      // Messages sent with contentType "json" come back as their JSON text.
      const body = typeof message.body === "string" ? (JSON.parse(message.body) as JobMessage) : message.body;
      return { leaseId: message.lease_id, body, attempts: message.attempts };
    },
    async ack(leaseId) {
      await call("ack", { acks: [{ lease_id: leaseId }], retries: [] });
    },
    async release(leaseId, delaySeconds = 0) {
      await call("ack", { acks: [], retries: [{ lease_id: leaseId, delay_seconds: delaySeconds }] });
    },
  };
}
