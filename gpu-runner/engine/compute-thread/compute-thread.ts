// The caller's side of the compute threads (compute-worker.ts): the engine's long synchronous
// stages run there, so the thread that awaits them (the runner's main loop) keeps sending
// heartbeats and keeps its time-limit timer. A stage whose signal aborts is stopped at once: its
// thread is terminated (a synchronous loop cannot be interrupted any other way) and the promise
// rejects with the signal's reason. Idle threads are kept for the next stage, since starting one
// (and its mask threads) costs tens of milliseconds; they never keep the process alive.
import { Worker } from "node:worker_threads";
import type { MaskParams, MaskResult } from "../masks/compute-masks.ts";
import { defaultThreadCount } from "../masks/mask-threads.ts";
import type { ComputeAnswer, ComputeTask } from "./tasks.ts";

const idle: Worker[] = [];
let started = 0;
let terminated = 0;

// Exported for its test only (test/engine/compute-thread.test.ts).
/** Threads started and threads stopped by an abort so far in this process: evidence for tests. */
export function computeThreadCounts(): { started: number; terminated: number } {
  return { started, terminated };
}

function take(): Worker {
  const worker = idle.pop();
  if (worker) {
    worker.ref();
    return worker;
  }
  started++;
  return new Worker(new URL("./compute-worker.ts", import.meta.url));
}

function run(task: ComputeTask, transfer: ArrayBuffer[], signal: AbortSignal | undefined): Promise<ComputeAnswer & { ok: true }> {
  signal?.throwIfAborted();
  const worker = take();
  return new Promise((resolve, reject) => {
    const settle = () => {
      signal?.removeEventListener("abort", onAbort);
      worker.off("message", onMessage);
      worker.off("error", onError);
    };
    const onMessage = (answer: ComputeAnswer) => {
      settle();
      worker.unref();
      idle.push(worker);
      if (answer.ok) resolve(answer);
      else reject(new Error(answer.message));
    };
    const onError = (error: Error) => {
      settle();
      reject(error);
    };
    const onAbort = () => {
      settle();
      terminated++;
      void worker.terminate();
      reject(signal!.reason);
    };
    worker.on("message", onMessage);
    worker.on("error", onError);
    signal?.addEventListener("abort", onAbort, { once: true });
    worker.postMessage(task, transfer);
  });
}

/**
 * Starts a compute thread and its mask threads ahead of the first image (a CLI's or a runner's
 * first image otherwise pays for their start-up).
 */
export async function startComputeThread(threads = defaultThreadCount()): Promise<void> {
  await run({ kind: "warm", threads }, [], undefined);
}

/** The whole buffer of `array` if it fills it alone (it can be handed over), else a copy that does. */
function own<T extends Float32Array | Uint32Array>(array: T): T {
  return (array.byteOffset === 0 && array.byteLength === array.buffer.byteLength ? array : array.slice()) as T;
}

/**
 * computeMasks in a compute thread. `outputs` are the network's outputs, planar [3, H, W]; a view
 * that fills its buffer alone is handed over (do not use it after), any other is copied first.
 */
export async function computeMasksInThread(
  outputs: Float32Array,
  width: number,
  height: number,
  params: MaskParams,
  signal?: AbortSignal,
): Promise<MaskResult> {
  if (outputs.length !== 3 * width * height) throw new Error("computeMasksInThread: outputs must be [3, H, W]");
  const handed = own(outputs);
  // The thread's own default would be the machine's, not the limit this process was given.
  const task: ComputeTask = { kind: "masks", outputs: handed, width, height, params: { ...params, threads: params.threads ?? defaultThreadCount() } };
  const answer = await run(task, [handed.buffer as ArrayBuffer], signal);
  if (answer.kind !== "masks") throw new Error(`the compute thread answered masks with ${answer.kind}`);
  return { labels: answer.labels, count: answer.count, timings: answer.timings };
}

/** flowsFromLabels in a compute thread; `labels` is copied, not handed over. */
export async function flowsFromLabelsInThread(labels: Uint32Array, width: number, height: number, signal?: AbortSignal): Promise<Float32Array> {
  const answer = await run({ kind: "flows", labels, width, height }, [], signal);
  if (answer.kind !== "flows") throw new Error(`the compute thread answered flows with ${answer.kind}`);
  return answer.flows;
}
