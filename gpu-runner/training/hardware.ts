// A description of the machine a run used, for training records.
import { cpus, totalmem } from "node:os";
import { createRequire } from "node:module";

export function describeHardware(threads: number, executionProvider = "cpu"): Record<string, string | number> {
  const cpu = cpus();
  const ortVersion = (createRequire(import.meta.url)("onnxruntime-node/package.json") as { version: string }).version;
  return {
    cpu: cpu[0]?.model ?? "unknown",
    logicalCores: cpu.length,
    threadsUsed: threads,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    executionProvider,
    onnxruntimeNode: ortVersion,
    node: process.version,
  };
}
