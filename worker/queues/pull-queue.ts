// What a pull queue of GPU jobs offers, apart from which one serves it: the interface that the
// deployed queue (cloudflare-pull-queue.ts) and the local stand-in (local-pull-queue.ts) implement
// and gpu-job-queue.ts chooses between. Its own file so the implementations import it without
// importing the module that imports them.
import type { JobMessage } from "../env.ts";

interface PulledMessage {
  leaseId: string;
  body: JobMessage;
  attempts: number;
}

export interface GpuJobQueue {
  send(message: JobMessage): Promise<void>;
  /** At most one message, invisible to other pulls for `visibilityTimeoutMs` unless acked or released. */
  pull(visibilityTimeoutMs: number): Promise<PulledMessage | null>;
  ack(leaseId: string): Promise<void>;
  /** Makes the message visible again after `delaySeconds`. */
  release(leaseId: string, delaySeconds?: number): Promise<void>;
}
