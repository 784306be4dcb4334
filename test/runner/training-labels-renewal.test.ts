// A training is leased with signed URLs to its examples' ROI artifacts. An import's measurement
// that completes after that replaces the artifact, and the leased URL answers 404: the runner asks
// the worker for the job's fresh URLs once and downloads the ROIs the segmentation has now, rather
// than handing the job back (which cost an attempt; found by bench:finetune). The worker's side is
// test/worker/import-measurement.test.ts; here a real local HTTP server plays storage and the
// worker's internal API.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LeasedTraining } from "../../schema/internal-api.ts";
import { readConfig } from "../../gpu-runner/runner/config.ts";
import { internalApi } from "../../gpu-runner/runner/internal-api.ts";
import type { JobContext } from "../../gpu-runner/runner/job-context.ts";
import { downloadLabels } from "../../gpu-runner/runner/train-job.ts";

const MEASURED = new Uint8Array([9, 8, 7, 6]);

describe("a training example's ROIs replaced after the lease", () => {
  let server: Server;
  let origin: string;
  const requests: string[] = [];

  const lease = (artifactUrl: string): LeasedTraining => ({
    job_id: "job-1",
    attempt: 1,
    lease_token: "token",
    lease_expires_at: Date.now() + 60_000,
    kind: "training",
    model: { id: "cpsam", name: "cpsam", version: "1", files: { onnx: `${origin}/model.onnx`, manifest: `${origin}/model.json` } },
    training: {
      examples: [
        {
          image: { id: "img", name: "a.tif", format: "tiff", width: 8, height: 8, channels: 1, url: `${origin}/image` },
          labels: { segmentation_id: "seg-1", artifact_url: artifactUrl },
        },
      ],
      steps: 10,
    },
    output: { model_id: "m", files: { onnx: `${origin}/out.onnx`, manifest: `${origin}/out.json` } },
  });

  beforeAll(async () => {
    server = createServer((request, response) => {
      requests.push(`${request.method} ${request.url}`);
      if (request.url === "/api/v1/internal/jobs/job-1/urls") {
        response.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(lease(`${origin}/rois.measured.bin`)));
      } else if (request.url === "/rois.measured.bin") {
        response.writeHead(200).end(MEASURED);
      } else {
        response.writeHead(404, { "Content-Type": "application/json" }).end('{"detail":"Object not found"}');
      }
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const context = () => ({ api: internalApi(readConfig([], { WORKER_URL: origin, RUNNER_TOKEN: "t" }), () => undefined) }) as unknown as JobContext;

  it("asks for the job's fresh URLs once and downloads the segmentation's ROIs from there", async () => {
    requests.length = 0;
    const job = lease(`${origin}/rois.bin`);
    expect(await downloadLabels(job, job.training.examples[0]!.labels, context())).toEqual(MEASURED);
    expect(requests).toEqual(["GET /rois.bin", "POST /api/v1/internal/jobs/job-1/urls", "GET /rois.measured.bin"]);
  });

  it("says the download was refused when the fresh URL has nothing either", async () => {
    const job = lease(`${origin}/rois.bin`);
    const elsewhere = { segmentation_id: "seg-2", artifact_url: `${origin}/gone.bin` };
    await expect(downloadLabels(job, elsewhere, context())).rejects.toThrow("download refused (404): Object not found");
  });
});
