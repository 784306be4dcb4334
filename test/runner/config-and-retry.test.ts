import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as ort from "onnxruntime-node";
import { describe, expect, it, vi } from "vitest";
import { defaultThreadCount, limitMaskThreads } from "../../gpu-runner/engine/masks/mask-threads.ts";
import { buildReferenceModel } from "../../gpu-runner/engine/reference-model.ts";
import { readConfig } from "../../gpu-runner/runner/config.ts";
import type { InternalApi } from "../../gpu-runner/runner/internal-api.ts";
import { ModelCache } from "../../gpu-runner/runner/model-cache.ts";
import { segmentParams } from "../../gpu-runner/runner/predict-job.ts";
import { TransientError, withRetry } from "../../common/retry.ts";
import { leasedPrediction } from "../../schema/internal-api.ts";

describe("runner configuration", () => {
  const env = { WORKER_URL: "http://127.0.0.1:8787/", RUNNER_TOKEN: "t" };

  it("reads the environment, with flags winning", () => {
    const config = readConfig(["--concurrency", "2", "--provider", "cpu"], { ...env, RUNNER_CONCURRENCY: "4", LEASE_SECONDS: "30" });
    expect(config).toMatchObject({ workerUrl: "http://127.0.0.1:8787", concurrency: 2, executionProvider: "cpu", leaseSeconds: 30 });
  });

  it("refuses a missing worker URL or token and nonsense values with a clear message", () => {
    expect(() => readConfig([], { RUNNER_TOKEN: "t" })).toThrow(/WORKER_URL/);
    expect(() => readConfig([], { WORKER_URL: "http://x" })).toThrow(/RUNNER_TOKEN/);
    expect(() => readConfig(["--provider", "tpu"], env)).toThrow(/auto, cuda, webgpu or cpu/);
    expect(() => readConfig(["--lease-seconds", "5"], env)).toThrow(/lease seconds must be a number >= 10/);
  });

  it("reads the threads of each session and of the masks from --threads or RUNNER_THREADS, none by default", () => {
    expect(readConfig([], env).threads).toBeUndefined();
    expect(readConfig([], { ...env, RUNNER_THREADS: "" }).threads).toBeUndefined();
    expect(readConfig([], { ...env, RUNNER_THREADS: "3" }).threads).toBe(3);
    expect(readConfig(["--threads", "1"], { ...env, RUNNER_THREADS: "3" }).threads).toBe(1);
  });

  it("refuses threads that are not a whole number of at least 1", () => {
    for (const bad of ["0", "-1", "1.5", "two", "Infinity"]) {
      expect(() => readConfig([`--threads=${bad}`], env)).toThrow(`threads must be a whole number >= 1, got ${JSON.stringify(bad)}`);
      expect(() => readConfig([], { ...env, RUNNER_THREADS: bad })).toThrow(/threads must be a whole number >= 1/);
    }
  });

  it("gives the model cache's sessions that many intra-op threads and one inter-op thread", async () => {
    const { onnx, manifest } = buildReferenceModel();
    const files: Record<string, Uint8Array> = { onnx, manifest: new TextEncoder().encode(JSON.stringify(manifest)) };
    const api = { download: async (url: string) => files[url]! } as unknown as InternalApi;
    const model = { id: "m", version: "1", name: "reference", files: { onnx: "onnx", manifest: "manifest" } };
    const create = vi.spyOn(ort.InferenceSession, "create");
    try {
      const dir = mkdtempSync(join(tmpdir(), "models-"));
      await new ModelCache(join(dir, "two"), 2 ** 20, "cpu", 2).session(api, model as never);
      expect(create.mock.calls[0]![1]).toMatchObject({ intraOpNumThreads: 2, interOpNumThreads: 1, executionProviders: ["cpu"] });
      await new ModelCache(join(dir, "default"), 2 ** 20, "cpu").session(api, model as never);
      expect(create.mock.calls[1]![1]).not.toHaveProperty("intraOpNumThreads");
    } finally {
      create.mockRestore();
    }
  });

  it("caps the mask tracing's threads for the process when given, else leaves the machine's", () => {
    const machine = defaultThreadCount();
    try {
      limitMaskThreads(1);
      expect(defaultThreadCount()).toBe(1);
    } finally {
      limitMaskThreads(undefined);
    }
    expect(defaultThreadCount()).toBe(machine);
  });
});

describe("retries", () => {
  const fast = { attempts: 4, baseMs: 1, maxMs: 5 };

  it("retries transient failures and returns the first success", async () => {
    let calls = 0;
    const waits: number[] = [];
    const result = await withRetry(
      async () => {
        if (++calls < 3) throw new TransientError("503");
        return "ok";
      },
      { ...fast, onRetry: (_e, _n, wait) => waits.push(wait) },
    );
    expect(result).toBe("ok");
    expect(calls).toBe(3);
    expect(waits.every((w) => w >= 0 && w <= 5)).toBe(true);
  });

  it("gives up after the last attempt, and never retries an error that is not transient", async () => {
    let calls = 0;
    await expect(
      withRetry(async () => {
        calls++;
        throw new TransientError("down");
      }, fast),
    ).rejects.toThrow("down");
    expect(calls).toBe(4);
    calls = 0;
    await expect(
      withRetry(async () => {
        calls++;
        throw new Error("image is corrupt");
      }, fast),
    ).rejects.toThrow("corrupt");
    expect(calls).toBe(1);
  });
});

describe("prediction parameters", () => {
  it("map the API's Cellpose names onto the engine's", () => {
    expect(segmentParams({ diameter: 17, cellprob_threshold: -1, flow_threshold: 0.6, min_size: 5, niter: 300, augment: true })).toEqual({
      diameter: 17,
      cellprobThreshold: -1,
      flowThreshold: 0.6,
      minSize: 5,
      niter: 300,
      augment: true,
    });
    expect(segmentParams({})).toEqual({ diameter: "auto" }); // no diameter: estimated by the engine
    // Cellpose's convention: 0 means "estimate it", as do null and "auto".
    for (const diameter of [0, null, "auto"] as const) expect(segmentParams({ diameter })).toEqual({ diameter: "auto" });
  });

  it("arrive typed in the lease: known ones checked as the API checks them, unknown (newer) ones dropped", () => {
    const params = leasedPrediction.shape.params;
    expect(params.parse({ flow_threshold: 0.2, augment: true, a_later_parameter: 1 })).toEqual({ flow_threshold: 0.2, augment: true });
    expect(params.parse(undefined)).toEqual({});
    expect(() => params.parse({ flow_threshold: "0.2" })).toThrow();
  });

  it("read channels as Cellpose does: [segment, nucleus], 1-based, 0 for the grayscale mean", () => {
    expect(segmentParams({ channels: [3, 0] }).channels).toEqual([2]); // nuclei in blue
    expect(segmentParams({ channels: [0, 0] }).channels).toBeUndefined(); // the engine's mean of all channels
    expect(segmentParams({ channels: [2, 3] }).channels).toEqual([1]); // a one-channel model reads the first only
    expect(segmentParams({ channels: [2, 3] }, 2).channels).toEqual([1, 2]);
  });

  it("pass the modality on when it is one the engine knows, and leave it to detection otherwise", () => {
    expect(segmentParams({ modality: "histology" }).modality).toBe("histology");
    expect(segmentParams({ modality: "auto" }).modality).toBe("auto");
    expect(segmentParams({}).modality).toBeUndefined();
  });
});
