// A compute thread: runs the engine's long synchronous stages (mask tracing, flows from labels) away
// from the runner's main loop, whose heartbeats and time-limit timer must keep running however
// long a stage takes. It takes one task at a time; the caller (compute-thread.ts) stops it by
// terminating the thread. Flow following and the flow-error check still spread over the mask
// threads (masks/mask-threads.ts), which this thread starts as its own.
import { parentPort } from "node:worker_threads";
import { flowsFromLabels } from "../flow-targets.ts";
import { computeMasks } from "../masks/compute-masks.ts";
import { startMaskThreads } from "../masks/mask-threads.ts";
import type { ComputeAnswer, ComputeTask } from "./tasks.ts";

async function answer(task: ComputeTask): Promise<{ answer: ComputeAnswer; transfer: ArrayBuffer[] }> {
  if (task.kind === "warm") {
    await startMaskThreads(task.threads);
    return { answer: { ok: true, kind: "warm" }, transfer: [] };
  }
  if (task.kind === "masks") {
    const { outputs, width, height, params } = task;
    const plane = width * height;
    const { labels, count, timings } = computeMasks(outputs.subarray(0, 2 * plane), outputs.subarray(2 * plane), width, height, params);
    return { answer: { ok: true, kind: "masks", labels, count, timings }, transfer: [labels.buffer as ArrayBuffer] };
  }
  const flows = flowsFromLabels(task.labels, task.width, task.height);
  return { answer: { ok: true, kind: "flows", flows }, transfer: [flows.buffer as ArrayBuffer] };
}

parentPort!.on("message", async (task: ComputeTask) => {
  try {
    const { answer: reply, transfer } = await answer(task);
    parentPort!.postMessage(reply, transfer);
  } catch (error) {
    parentPort!.postMessage({ ok: false, message: error instanceof Error ? error.message : String(error) } satisfies ComputeAnswer);
  }
});
