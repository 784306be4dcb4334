// Plays the GPU runner over the internal API, so tests can take a job to COMPLETED the way a
// runner would (lease, PUT the ROI artifact through its signed URL, complete).
import { expect } from "vitest";
import { call, json, RUNNER_TOKEN } from "./helpers.ts";

export interface Lease {
  job_id: string;
  kind: string;
  attempt: number;
  lease_token: string;
  params?: Record<string, unknown>;
  image: { id: string; url: string };
  model: { id: string; files: { onnx: string; manifest: string } };
  output: { segmentation_id: string; artifact_url: string; preview_url?: string };
}

export const runner = (path: string, body: unknown) => call(`/internal${path}`, { key: RUNNER_TOKEN, json: body });

/** Leases until `jobId` comes up (other jobs queued in the same test file are taken and left). */
export async function leaseJob(jobId: string, runnerId = "runner-a"): Promise<Lease> {
  for (;;) {
    const response = await runner("/jobs/lease", { runner_id: runnerId, wait_seconds: 5 });
    expect(response.status).toBe(200);
    const job = await json<Lease>(response);
    if (job.job_id === jobId) return job;
  }
}

/** Completes a prediction as a runner that found `roiCount` cells (the artifact bytes are a stand-in). */
export async function completePrediction(predictionId: string, roiCount = 3): Promise<Lease> {
  const job = await leaseJob(predictionId);
  const put = await call(job.output.artifact_url, { method: "PUT", body: new Uint8Array([1, 2, 3, 4]), headers: { "Content-Length": "4" } });
  expect(put.status).toBe(200);
  const result = { roi_count: roiCount, confluency: 0.25, width: 8, height: 6, diameter: 17.5 };
  const done = await runner(`/jobs/${predictionId}/complete`, { lease_token: job.lease_token, result });
  expect(done.status).toBe(200);
  return job;
}
