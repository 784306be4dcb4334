// Worker side of mask-threads.ts: runs chunks of flow following and of the flow-error check on
// the shared arrays it is sent, with the same functions the calling thread uses.
import { parentPort } from "node:worker_threads";
import { flowErrorsRange } from "./flow-error.ts";
import { followFlowsRange } from "./follow-flows.ts";
import { DiffusionScratch } from "../heat-diffusion.ts";
import { claimChunks, type ChunkMessage } from "./mask-threads.ts";

const scratch = new DiffusionScratch();

parentPort!.on("message", (message: ChunkMessage) => {
  const { job } = message;
  if (job.kind === "follow") {
    const { flows, foreground, ends, width, height, iterations, chunkSize } = job;
    claimChunks(message, (chunk) => {
      followFlowsRange(flows, width, height, foreground, iterations, chunk * chunkSize, Math.min(foreground.length, (chunk + 1) * chunkSize), ends);
    });
  } else {
    const { labels, unitFlows, boxes, errors, width, iterations, chunkSize } = job;
    const count = errors.length - 1;
    claimChunks(message, (chunk) => {
      flowErrorsRange(labels, unitFlows, boxes, width, iterations, 1 + chunk * chunkSize, Math.min(count, (chunk + 1) * chunkSize), errors, scratch);
    });
  }
});
