// Runs the runner's work on untrusted inputs (decoding an image, rasterising a segmentation's ROIs)
// in a thread of its own, one thread per task, under a time limit and a heap limit. The main loop
// meanwhile keeps sending heartbeats; a task past its limit is stopped (the thread terminated) and
// fails its job as an input fault, once, with the reason, instead of holding a runner until the
// lease runs out and moving on to the next runner. The decoders' own limits (samples, blocks,
// bytes) bound the pixel memory, which lives outside the heap.
import { Worker } from "node:worker_threads";
import type { DecodedImage } from "../../../common/decode/index.ts";
import { ImageDecodeError } from "../../../common/decode/index.ts";
import { InputError } from "../../engine/faults.ts";
import type { InputAnswer, InputTask } from "./tasks.ts";

export interface InputBudget {
  /** Wall-clock seconds a task may take. */
  seconds: number;
  /** The thread's JavaScript heap (V8's old generation), in MB. */
  heapMb: number;
}

function run(task: InputTask, budget: InputBudget, transfer: ArrayBuffer[]): Promise<InputAnswer> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL("./input-worker.ts", import.meta.url), { resourceLimits: { maxOldGenerationSizeMb: budget.heapMb } });
    const what = task.kind === "decode" ? "decoding the image" : `rasterising the segmentation of ${task.name}`;
    const timer = setTimeout(() => {
      void worker.terminate();
      reject(new InputError(`${what} took more than ${budget.seconds} s, the runner's limit (INPUT_SECONDS); the file is too costly to read`));
    }, budget.seconds * 1000);
    const settle = () => clearTimeout(timer);
    worker.once("message", (answer: InputAnswer) => {
      settle();
      void worker.terminate();
      resolve(answer);
    });
    worker.once("error", (error: Error & { code?: string }) => {
      settle();
      if (error.code === "ERR_WORKER_OUT_OF_MEMORY")
        reject(new InputError(`${what} needed more than ${budget.heapMb} MB of heap, the runner's limit (INPUT_HEAP_MB)`));
      else reject(error);
    });
    worker.postMessage(task, transfer);
  });
}

function failure(answer: Extract<InputAnswer, { ok: false }>): Error {
  if (answer.fault === "decode") return new ImageDecodeError(answer.message);
  if (answer.fault === "input") return new InputError(answer.message);
  return new Error(answer.message);
}

/** Decodes a whole image file in the input thread. The bytes are handed over (not copied): do not use them after. */
export async function decodeInThread(bytes: Uint8Array, budget: InputBudget): Promise<DecodedImage> {
  // Only a buffer the bytes fill alone can be handed over; a view on a shared one is copied first.
  const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
  const answer = await run({ kind: "decode", bytes: own }, budget, [own.buffer as ArrayBuffer]);
  if (!answer.ok) throw failure(answer);
  if (!("image" in answer)) throw new Error("the input thread answered a decode with labels");
  return answer.image;
}

/** A segmentation's labels, rasterised from its ROI artifact in the input thread. */
export async function labelsInThread(artifact: Uint8Array, width: number, height: number, name: string, budget: InputBudget): Promise<Uint32Array> {
  const answer = await run({ kind: "labels", artifact, width, height, name }, budget, []);
  if (!answer.ok) throw failure(answer);
  if (!("labels" in answer)) throw new Error("the input thread answered a rasterisation with an image");
  return answer.labels;
}
