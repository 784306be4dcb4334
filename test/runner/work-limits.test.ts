// The runner's side of the work limits (schema/work-limits.ts): a prediction past them fails as the
// input's fault before anything is fetched, whatever submitted it, and a job that runs into its time
// limit is stopped and reported at once. The worker's side (422s, the job FAILED and never leased
// again) is test/worker/work-limits.test.ts. The internal API is played by a recorder: these tests are
// about what the runner asks of it.
import { describe, expect, it } from "vitest";
import type { JobFault } from "../../schema/db.ts";
import type { LeasedJob, LeasedPrediction, LeasedPreview } from "../../schema/internal-api.ts";
import { readConfig } from "../../gpu-runner/runner/config.ts";
import type { InternalApi } from "../../gpu-runner/runner/internal-api.ts";
import type { ModelCache } from "../../gpu-runner/runner/model-cache.ts";
import { Runner } from "../../gpu-runner/runner/runner.ts";
import { encodePng } from "../engine/helpers/png-writer.ts";

/** An internal API that records what the runner reports; `download` answers after `downloadMs`. */
function recordingApi(downloadMs = 0) {
  const calls: string[] = [];
  const failures: { reason: string; fault: JobFault }[] = [];
  const api: InternalApi = {
    lease: async () => null,
    heartbeat: async () => void calls.push("heartbeat"),
    urls: async (job) => job,
    complete: async () => void calls.push("complete"),
    fail: async (_job, reason, fault) => void failures.push({ reason, fault }),
    release: async () => void calls.push("release"),
    download: async () => {
      calls.push("download");
      await new Promise((resolve) => setTimeout(resolve, downloadMs));
      return encodePng({ width: 8, height: 8, colourType: 0, bitDepth: 8, values: new Uint8Array(64) });
    },
    rangeSource: async () => {
      calls.push("rangeSource");
      throw new Error("not read in parts here");
    },
    upload: async () => void calls.push("upload"),
  };
  return { api, calls, failures };
}

const models = {
  session: async () => {
    throw new Error("no model is loaded for a job refused before any work");
  },
} as unknown as ModelCache;

const runnerWith = (api: InternalApi) => new Runner(readConfig([], { WORKER_URL: "http://127.0.0.1:1", RUNNER_TOKEN: "t" }), api, models, () => undefined);

const lease = { job_id: "job-1", attempt: 1, lease_token: "token", lease_expires_at: Date.now() + 120_000 };
const image = { id: "img", name: "cells.png", format: "png", width: 8, height: 8, channels: 1, channel_names: null, url: "http://127.0.0.1:1/img" };

function prediction(params: LeasedPrediction["params"], pixelSize: { x: number; y: number } | null = null, side = image.width): LeasedJob {
  return {
    ...lease,
    kind: "prediction",
    model: { id: "cpsam", name: "cpsam", version: "1", files: { onnx: "http://127.0.0.1:1/m.onnx", manifest: "http://127.0.0.1:1/m.json" } },
    params,
    image: { ...image, width: side, height: side, pixel_size_um: pixelSize },
    output: { segmentation_id: "seg", artifact_url: "http://127.0.0.1:1/rois" },
  };
}

describe("a prediction past the work limits", () => {
  it("whose file's pixel size makes its cell expansion reach past the limit fails as the input's, before anything is fetched", async () => {
    const { api, calls, failures } = recordingApi();
    // A file calibrated at 1e-4 µm: 1 µm reaches 10,000 px.
    await runnerWith(api).process(prediction({ cell_expansion_um: 1 }, { x: 1e-4, y: 1e-4 }));
    expect(failures).toEqual([
      {
        reason:
          "cell_expansion_um 1 at a pixel size of 0.0001 µm reaches 10000 px, past the limit of 200 px a cell expansion may reach (at most 0.02 µm at this pixel size); the pixel size is the file's",
        fault: "input",
      },
    ]);
    expect(calls).toEqual([]);
  });

  it("queued before the limits (a diameter of 1000 px, an expansion of 500 px) fails the same way, with the limit it broke", async () => {
    const { api, calls, failures } = recordingApi();
    const runner = runnerWith(api);
    await runner.process(prediction({ diameter: 1000 }));
    await runner.process(prediction({ diameter: 0.5 }));
    await runner.process(prediction({ cell_expansion_px: 500 }));
    expect(failures).toEqual([
      { reason: "diameter 1000 px is past the limit of 300 px (downscale the image for larger objects)", fault: "input" },
      { reason: 'diameter 0.5 px is below the limit of 5 px (0 or "auto" estimates it)', fault: "input" },
      { reason: "cell_expansion_px 500 is past the limit of 200 px a cell expansion may reach", fault: "input" },
    ]);
    expect(calls).toEqual([]);
    expect(runner.stats).toMatchObject({ failed: 3, completed: 0 });
  });

  it("whose parameters price it past the 4-h limit (niter 2000 at 300 px on a 20000² slide) fails the same way, naming the parameter", async () => {
    const { api, calls, failures } = recordingApi();
    await runnerWith(api).process(prediction({ diameter: 300, niter: 2000 }, null, 20000));
    expect(failures).toEqual([{ reason: expect.stringMatching(/^niter 2000 prices this prediction of 400 MP at about 9.9 h of work/), fault: "input" }]);
    expect(calls).toEqual([]);
  });
});

describe("a job that runs into its time limit", () => {
  it("is stopped and reported as soon as the limit is reached, not when its work next looks up, and writes nothing", async () => {
    // Its image takes 3 s to arrive; 0.2 s of its time limit were left when it was leased.
    const { api, calls, failures } = recordingApi(3000);
    const preview: LeasedPreview = {
      ...lease,
      time_limit: { seconds: 1200, left_seconds: 0.2 },
      kind: "preview",
      image: { ...image, pixel_size_um: null },
      output: { preview_url: "http://127.0.0.1:1/preview" },
    };
    const started = Date.now();
    const reported = new Promise<number>((resolve) => {
      const fail = api.fail;
      api.fail = async (...args) => {
        resolve(Date.now() - started);
        return fail(...args);
      };
    });
    const runner = runnerWith(api);
    const processed = runner.process(preview);
    // Reported a second after the worker's limit (so the worker already holds the job past it), before the download ends.
    expect(await reported).toBeGreaterThanOrEqual(1100);
    expect(await reported).toBeLessThan(2500);
    expect(failures).toEqual([{ reason: "the job ran into its time limit of 1200 s", fault: "runner" }]);
    // Its slot stays taken until the work has stopped (at its next checkpoint, after the download).
    await processed;
    expect(Date.now() - started).toBeGreaterThanOrEqual(2900);
    expect(calls.filter((call) => call !== "heartbeat")).toEqual(["download"]);
    expect(runner.stats).toMatchObject({ completed: 0 });
  });
});
