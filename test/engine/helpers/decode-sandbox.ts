// Runs decodeImage on untrusted bytes in a worker thread with a heap limit and a time limit, so a
// decoder that hangs, exhausts memory or crashes shows up as an outcome of one case instead of
// taking the test run down with it.
import { Worker } from "node:worker_threads";
import type { SandboxReply } from "./decode-sandbox-worker.ts";

/** What the worker replied, or that it hung or died. */
export type DecodeOutcome = Omit<SandboxReply, "id" | "outcome"> & { outcome: SandboxReply["outcome"] | "timeout" | "crashed" };

export interface SandboxLimits {
  /** Old-generation heap of the worker; a decoder past it crashes the worker, not the test. */
  heapMb: number;
  /** A decode still running after this is a hang. */
  timeoutMs: number;
}

export class DecodeSandbox {
  private worker: Worker | null = null;
  private nextId = 0;
  private readonly limits: SandboxLimits;

  constructor(limits: SandboxLimits) {
    this.limits = limits;
  }

  private start(): Worker {
    this.worker ??= new Worker(new URL("./decode-sandbox-worker.ts", import.meta.url), {
      resourceLimits: { maxOldGenerationSizeMb: this.limits.heapMb, maxYoungGenerationSizeMb: 32 },
      execArgv: [],
    });
    return this.worker;
  }

  async decode(bytes: Uint8Array, page?: number): Promise<DecodeOutcome> {
    const worker = this.start();
    const id = this.nextId++;
    const started = performance.now();
    return new Promise<DecodeOutcome>((resolve) => {
      const done = (outcome: DecodeOutcome, restart: boolean) => {
        clearTimeout(timer);
        worker.off("message", onMessage);
        worker.off("error", onError);
        worker.off("exit", onExit);
        if (restart) {
          void worker.terminate();
          this.worker = null;
        }
        resolve(outcome);
      };
      const elapsed = () => performance.now() - started;
      const onMessage = (reply: SandboxReply) => {
        if (reply.id === id) done(reply, false);
      };
      const onError = (error: Error) =>
        done({ outcome: "crashed", message: `${(error as { code?: string }).code ?? error.name}: ${error.message}`, ms: elapsed(), memoryGrowth: NaN }, true);
      const onExit = (code: number) => done({ outcome: "crashed", message: `worker exited with code ${code}`, ms: elapsed(), memoryGrowth: NaN }, true);
      const timer = setTimeout(
        () => done({ outcome: "timeout", message: `no answer after ${this.limits.timeoutMs} ms`, ms: elapsed(), memoryGrowth: NaN }, true),
        this.limits.timeoutMs,
      );
      worker.on("message", onMessage);
      worker.on("error", onError);
      worker.on("exit", onExit);
      worker.postMessage({ id, bytes, page });
    });
  }

  async close(): Promise<void> {
    await this.worker?.terminate();
    this.worker = null;
  }
}
