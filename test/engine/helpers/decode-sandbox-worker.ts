// The worker side of decode-sandbox.ts: decodes and probes each file it is sent and reports what
// happened, how long it took and how much memory it grew by.
import { parentPort } from "node:worker_threads";
import { decodeImage, ImageDecodeError, probeImage } from "../../../common/decode/index.ts";

export interface SandboxReply {
  id: number;
  outcome: "decoded" | "decode-error" | "other-error";
  message: string;
  kind?: string;
  ms: number;
  /** Growth of the JS heap plus ArrayBuffer memory across the call, in bytes. */
  memoryGrowth: number;
  /** For a decoded image: whether its size and data agree with each other and with the probe. */
  sane?: boolean;
  size?: string;
}

function saneImage(bytes: Uint8Array, options: { page?: number }): { sane: boolean; size: string } {
  const image = decodeImage(bytes, options);
  const probe = probeImage(bytes);
  const { width, height, channels, data } = image;
  const sane =
    Number.isInteger(width) &&
    width >= 1 &&
    Number.isInteger(height) &&
    height >= 1 &&
    Number.isInteger(channels) &&
    channels >= 1 &&
    data.length === width * height * channels &&
    channels === probe.channels &&
    (options.page !== undefined || (width === probe.width && height === probe.height));
  return { sane, size: `${width}x${height}x${channels}` };
}

parentPort!.on("message", ({ id, bytes, page }: { id: number; bytes: Uint8Array; page?: number }) => {
  const before = process.memoryUsage();
  const started = performance.now();
  let reply: Omit<SandboxReply, "ms" | "memoryGrowth">;
  try {
    reply = { id, outcome: "decoded", message: "", ...saneImage(bytes, page === undefined ? {} : { page }) };
  } catch (error) {
    if (error instanceof ImageDecodeError) reply = { id, outcome: "decode-error", message: error.message, kind: error.kind };
    else reply = { id, outcome: "other-error", message: error instanceof Error ? `${error.name}: ${error.message}\n${error.stack}` : String(error) };
  }
  const ms = performance.now() - started;
  const after = process.memoryUsage();
  const memoryGrowth = after.heapUsed + after.arrayBuffers - (before.heapUsed + before.arrayBuffers);
  parentPort!.postMessage({ ...reply, ms, memoryGrowth } satisfies SandboxReply);
});
