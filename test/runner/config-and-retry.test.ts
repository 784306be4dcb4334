import { describe, expect, it } from "vitest";
import { readConfig } from "../../gpu-runner/runner/config.ts";
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
