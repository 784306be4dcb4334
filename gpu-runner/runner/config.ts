// Runner configuration: environment variables, overridden by command-line flags.
import { hostname, homedir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { InputBudget } from "./input-thread/input-thread.ts";
import { DEFAULT_BLOCK_MEMORY_BYTES, SINGLE_PASS_PIXELS } from "../engine/blocks/segment-blocks.ts";
import type { ExecutionProviderChoice } from "../engine/model.ts";
import { DEFAULT_TRAINING_MEMORY_BYTES } from "../training/fine-tune.ts";

export interface RunnerConfig {
  workerUrl: string;
  runnerToken: string;
  runnerId: string;
  executionProvider: ExecutionProviderChoice;
  /**
   * Jobs in flight at once. Two (the default) keep the execution provider busy: while one job's
   * network runs on onnxruntime's threads, the other downloads, decodes or traces masks.
   */
  concurrency: number;
  /**
   * Threads each inference session (onnxruntime's intra-op threads, one inter-op) and the mask
   * tracing may use; undefined: onnxruntime's own choice, and the machine's cores for the masks.
   */
  threads: number | undefined;
  leaseSeconds: number;
  modelCacheDir: string;
  modelCacheBytes: number;
  /** Training budget when a job names no step count. */
  trainingSeconds: number;
  /** Bytes of prepared training images a training job holds at once (training/prepared-image-cache.ts). */
  trainingMemoryBytes: number;
  /** On SIGTERM, how long jobs in hand may run before they are handed back. */
  shutdownGraceSeconds: number;
  /** Largest image file a job downloads (it is held in memory to decode); a larger one fails the job. */
  maxInputBytes: number;
  /** Images of more pixels are read in parts and segmented block by block (engine/blocks/). */
  singlePassPixels: number;
  /** Memory the blocks of such an image may take; sets the block size. */
  blockMemoryBytes: number;
  /** Time and heap of the input thread that decodes images and rasterises ROIs (input-thread/). */
  inputBudget: InputBudget;
}

export const CONFIG_HELP = `npm run runner -- [flags]     (each flag also reads from the environment variable shown)
  --worker-url URL            WORKER_URL                 the worker, e.g. http://127.0.0.1:8787 (required)
  --token TOKEN               RUNNER_TOKEN               a runner token of that worker (required)
  --id NAME                   RUNNER_ID                  how this runner names itself in leases (default host-pid)
  --provider auto|cuda|webgpu|cpu  EXECUTION_PROVIDER    auto: CUDA, else WebGPU, else CPU (default auto)
  --concurrency N             RUNNER_CONCURRENCY         jobs in flight at once (default 2)
  --threads N                 RUNNER_THREADS             threads of each onnxruntime session and of the mask tracing (default: onnxruntime's choice; all cores for masks)
  --lease-seconds N           LEASE_SECONDS              lease length asked for; heartbeats renew it (default 120)
  --model-cache DIR           MODEL_CACHE_DIR            downloaded models (default ~/.cache/cellseg/models)
  --model-cache-mb N          MODEL_CACHE_MB             cache size before old versions are evicted (default 2048)
  --training-seconds N        TRAINING_SECONDS           fine-tuning budget when a job sets no steps (default 600)
  --training-memory-mb N      TRAINING_MEMORY_MB         prepared training images held at once, 13 bytes a pixel (21 for a colour model; default 2048)
  --grace-seconds N           SHUTDOWN_GRACE_SECONDS     on SIGTERM, time to finish jobs in hand (default 60)
  --max-input-mb N            MAX_INPUT_MB               largest image file a job downloads whole (default 6144)
  --single-pass-mp N          SINGLE_PASS_MP             images whose network input may pass this (megapixels: with an automatic diameter, 9x the image) are read in parts and segmented block by block (default 16.8, 4096²)
  --block-memory-mb N         BLOCK_MEMORY_MB            memory those blocks may take; sets the block size (default 640)
  --input-seconds N           INPUT_SECONDS              time one decode or rasterisation of an input may take; past it the job fails (default 300)
  --input-heap-mb N           INPUT_HEAP_MB              JavaScript heap of the thread that does it (default 1024)`;

function number(value: string | undefined, name: string, fallback: number, min: number): number {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < min) throw new Error(`${name} must be a number >= ${min}, got ${JSON.stringify(value)}`);
  return n;
}

/** A whole number >= 1, or undefined when not given. */
function count(value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === "") return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a whole number >= 1, got ${JSON.stringify(value)}`);
  return n;
}

export function readConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): RunnerConfig {
  const { values } = parseArgs({
    args: argv,
    options: {
      "worker-url": { type: "string" },
      token: { type: "string" },
      id: { type: "string" },
      provider: { type: "string" },
      concurrency: { type: "string" },
      threads: { type: "string" },
      "lease-seconds": { type: "string" },
      "model-cache": { type: "string" },
      "model-cache-mb": { type: "string" },
      "training-seconds": { type: "string" },
      "training-memory-mb": { type: "string" },
      "grace-seconds": { type: "string" },
      "max-input-mb": { type: "string" },
      "single-pass-mp": { type: "string" },
      "block-memory-mb": { type: "string" },
      "input-seconds": { type: "string" },
      "input-heap-mb": { type: "string" },
    },
  });
  const workerUrl = values["worker-url"] ?? env.WORKER_URL;
  const runnerToken = values.token ?? env.RUNNER_TOKEN;
  if (!workerUrl) throw new Error("WORKER_URL (or --worker-url) is required");
  if (!runnerToken) throw new Error("RUNNER_TOKEN (or --token) is required");
  const provider = (values.provider ?? env.EXECUTION_PROVIDER ?? "auto") as ExecutionProviderChoice;
  if (!["auto", "cuda", "webgpu", "cpu"].includes(provider)) throw new Error(`execution provider must be auto, cuda, webgpu or cpu, got ${provider}`);
  return {
    workerUrl: workerUrl.replace(/\/+$/, ""),
    runnerToken,
    runnerId: values.id ?? env.RUNNER_ID ?? `${hostname()}-${process.pid}`,
    executionProvider: provider,
    concurrency: Math.floor(number(values.concurrency ?? env.RUNNER_CONCURRENCY, "concurrency", 2, 1)),
    threads: count(values.threads ?? env.RUNNER_THREADS, "threads"),
    leaseSeconds: Math.floor(number(values["lease-seconds"] ?? env.LEASE_SECONDS, "lease seconds", 120, 10)),
    modelCacheDir: values["model-cache"] ?? env.MODEL_CACHE_DIR ?? join(homedir(), ".cache", "cellseg", "models"),
    modelCacheBytes: number(values["model-cache-mb"] ?? env.MODEL_CACHE_MB, "model cache size", 2048, 1) * 1024 * 1024,
    // 600 s, the free plan's bound: on the 2-core CPU, 300 s left a weak set (brightfield) at +0.126
    // AP@0.5 where 600 s reached +0.157, and changed nothing elsewhere (docs/benchmarks.md, bench:finetune).
    trainingSeconds: number(values["training-seconds"] ?? env.TRAINING_SECONDS, "training seconds", 600, 1),
    trainingMemoryBytes:
      number(values["training-memory-mb"] ?? env.TRAINING_MEMORY_MB, "training memory", DEFAULT_TRAINING_MEMORY_BYTES / 2 ** 20, 1) * 1024 * 1024,
    shutdownGraceSeconds: number(values["grace-seconds"] ?? env.SHUTDOWN_GRACE_SECONDS, "grace seconds", 60, 0),
    maxInputBytes: number(values["max-input-mb"] ?? env.MAX_INPUT_MB, "max input size", 6144, 1) * 1024 * 1024,
    singlePassPixels: number(values["single-pass-mp"] ?? env.SINGLE_PASS_MP, "single-pass megapixels", SINGLE_PASS_PIXELS / 1e6, 0) * 1e6,
    blockMemoryBytes: number(values["block-memory-mb"] ?? env.BLOCK_MEMORY_MB, "block memory", DEFAULT_BLOCK_MEMORY_BYTES / 2 ** 20, 1) * 2 ** 20,
    // A 2^28-sample TIFF decodes in well under a minute on the 2-core CPU; five times that is
    // room for a slow host, and far below the hours an unbounded hostile file could take.
    inputBudget: {
      seconds: number(values["input-seconds"] ?? env.INPUT_SECONDS, "input seconds", 300, 1),
      heapMb: number(values["input-heap-mb"] ?? env.INPUT_HEAP_MB, "input heap", 1024, 64),
    },
  };
}
