// Spreads the two costly stages of mask reconstruction (flow following, the flow-error check)
// over threads: a persistent pool of node:worker_threads plus the calling thread, sharing their
// arrays through SharedArrayBuffers. Work is cut into chunks that every thread claims from a shared
// counter, so a busy core (this machine is shared) or a worker still starting up just claims fewer
// chunks; the caller never waits for a worker that has not begun. Each chunk writes its own part of
// the output, so the result does not depend on which thread ran what.
// computeMasks is synchronous, so the calling thread blocks in Atomics.wait for chunks that workers
// are still finishing (allowed on Node's main thread).
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";

/** What a worker needs to run chunks of one job; arrays are views on SharedArrayBuffers. */
type ChunkJob =
  | { kind: "follow"; flows: Float32Array; foreground: Int32Array; ends: Int32Array; width: number; height: number; iterations: number; chunkSize: number }
  | {
      kind: "flowError";
      labels: Uint32Array;
      unitFlows: Float32Array;
      boxes: Int32Array;
      errors: Float64Array;
      width: number;
      chunkSize: number;
    };

/** Message to a worker: the job plus its control words (see CONTROL_*). */
export interface ChunkMessage {
  job: ChunkJob;
  control: Int32Array;
  chunkCount: number;
}

const CONTROL_NEXT = 0; // next chunk to claim
const CONTROL_DONE = 1; // chunks finished
const CONTROL_FAILED = 2; // 1 once a worker threw

/** A worker making no progress for this long is taken as dead rather than waited on forever. */
const STALL_LIMIT_MS = 60_000;

let threadLimit: number | undefined;

/**
 * Threads the masks use where their parameters name none: `limitMaskThreads`'s, else the machine's
 * available parallelism.
 */
export function defaultThreadCount(): number {
  return threadLimit ?? availableParallelism();
}

/** Sets that default for this process (a runner's --threads); undefined restores the machine's. */
export function limitMaskThreads(threads: number | undefined): void {
  threadLimit = threads;
}

export function sharedFloat32(length: number): Float32Array {
  return new Float32Array(new SharedArrayBuffer(4 * length));
}

export function sharedInt32(length: number): Int32Array {
  return new Int32Array(new SharedArrayBuffer(4 * length));
}

const pool: Worker[] = [];
const online: Promise<void>[] = [];
let workerError: Error | undefined;
let workerChunks = 0;

/**
 * Starts the workers for `threads` threads ahead of the first image, so that image does not pay
 * for their start-up (which otherwise overlaps with this thread doing the work alone).
 */
export async function startMaskThreads(threads = defaultThreadCount()): Promise<void> {
  const started = workers(threads - 1);
  // Unreferenced workers would let the process exit while it waits for them here.
  for (const worker of started) worker.ref();
  await Promise.all(online.slice(0, threads - 1));
  for (const worker of started) worker.unref();
}

/** How many chunks workers (not the calling thread) have run so far: evidence the pool works. */
export function chunksRunByWorkers(): number {
  return workerChunks;
}

function workers(count: number): Worker[] {
  while (pool.length < count) {
    const worker = new Worker(new URL("./mask-worker.ts", import.meta.url));
    worker.on("error", (error: Error) => {
      workerError = error;
    });
    online.push(new Promise((resolve) => worker.once("online", () => resolve())));
    // Idle workers must not keep the process alive.
    worker.unref();
    pool.push(worker);
  }
  return pool.slice(0, count);
}

/**
 * Runs chunks 0..chunkCount-1 of `job` on `threads` threads (this one included); `runChunk` is
 * this thread's way of running one (workers run the same code through mask-worker.ts).
 */
export function runChunks(job: ChunkJob, chunkCount: number, threads: number, runChunk: (chunk: number) => void): void {
  if (workerError) throw new Error(`mask worker failed earlier: ${workerError.message}`);
  const control = sharedInt32(3);
  const message: ChunkMessage = { job, control, chunkCount };
  for (const worker of workers(Math.min(threads, chunkCount) - 1)) worker.postMessage(message);
  let localChunks = 0;
  for (let chunk = Atomics.add(control, CONTROL_NEXT, 1); chunk < chunkCount; chunk = Atomics.add(control, CONTROL_NEXT, 1)) {
    runChunk(chunk);
    localChunks++;
    Atomics.add(control, CONTROL_DONE, 1);
  }
  let done = Atomics.load(control, CONTROL_DONE);
  let lastProgress = performance.now();
  while (done < chunkCount) {
    if (Atomics.load(control, CONTROL_FAILED)) throw new Error(`mask worker failed on a ${job.kind} chunk`);
    Atomics.wait(control, CONTROL_DONE, done, 100);
    const now = Atomics.load(control, CONTROL_DONE);
    if (now !== done) {
      done = now;
      lastProgress = performance.now();
    } else if (performance.now() - lastProgress > STALL_LIMIT_MS) throw new Error(`mask worker stalled on a ${job.kind} chunk`);
  }
  workerChunks += chunkCount - localChunks;
}

/** A worker's side of runChunks: claims chunks until none are left. */
export function claimChunks(message: ChunkMessage, runChunk: (chunk: number) => void): void {
  const { control, chunkCount } = message;
  try {
    for (let chunk = Atomics.add(control, CONTROL_NEXT, 1); chunk < chunkCount; chunk = Atomics.add(control, CONTROL_NEXT, 1)) {
      runChunk(chunk);
      Atomics.add(control, CONTROL_DONE, 1);
      Atomics.notify(control, CONTROL_DONE);
    }
  } catch (error) {
    Atomics.store(control, CONTROL_FAILED, 1);
    Atomics.notify(control, CONTROL_DONE);
    throw error;
  }
}
