// Worker side of mask-threads.ts: runs chunks of flow following and of the flow-error check on
// the shared arrays it is sent, with the same functions the calling thread uses.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { parentPort } from "node:worker_threads";
import { flowErrorsRange } from "./flow-error.ts";
import { followFlowsRange } from "./follow-flows.ts";
import { DiffusionScratch } from "../heat-diffusion.ts";
import { claimChunks, type ChunkMessage } from "./mask-threads.ts";

const scratch = new DiffusionScratch();

// A job's arrays are SharedArrayBuffers, freed only once every thread that saw them has collected
// them; this thread allocates so little that its collector would seldom run, and each image's
// arrays (tens of MB) would stay alive, block after block of a large image. A full collection of
// this tiny heap after each job (about a millisecond) lets them go.
setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

parentPort!.on("message", (message: ChunkMessage) => {
  const { job } = message;
  if (job.kind === "follow") {
    const { flows, foreground, ends, width, height, iterations, chunkSize } = job;
    claimChunks(message, (chunk) => {
      followFlowsRange(flows, width, height, foreground, iterations, chunk * chunkSize, Math.min(foreground.length, (chunk + 1) * chunkSize), ends);
    });
  } else {
    const { labels, unitFlows, boxes, errors, width, chunkSize } = job;
    const count = errors.length - 1;
    claimChunks(message, (chunk) => {
      flowErrorsRange(labels, unitFlows, boxes, width, 1 + chunk * chunkSize, Math.min(count, (chunk + 1) * chunkSize), errors, scratch);
    });
  }
  setImmediate(collectGarbage);
});
