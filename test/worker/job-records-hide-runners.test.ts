// Which runner holds a job is the operator's to know: a runner's name is a host name and a process
// id of the service's own machines. No job record a user sees, through the API or the dashboard,
// carries it, while the job runs or after its leases ran out.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, createOrg, json, uploadImage } from "./helpers.ts";
import { dashboardCall, signIn } from "./dashboard-helpers.ts";
import { runner } from "./runner-helpers.ts";

const RUNNER = "gpu-host-7.internal-4711";

/** Leases as RUNNER until `jobId` comes up; returns the attempt it got. */
async function leaseAs(jobId: string): Promise<number> {
  for (;;) {
    const response = await runner("/jobs/lease", { runner_id: RUNNER, wait_seconds: 5 });
    expect(response.status).toBe(200);
    const job = await json<{ job_id: string; attempt: number }>(response);
    if (job.job_id === jobId) return job.attempt;
  }
}

describe("job records users see", () => {
  it("never name the runner holding the job, in the API or the dashboard, nor in the reason once its leases ran out", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const { prediction_id: id } = await json<{ prediction_id: string }>(
      await call("/predict", { key: org.key, json: { image_id: image.id, model_id: "cpsam" } }),
    );
    expect(await leaseAs(id)).toBe(1);
    const holder = await env.DB.prepare("SELECT lease_holder FROM jobs WHERE id = ?1").bind(id).first<{ lease_holder: string }>();
    expect(holder?.lease_holder).toBe(RUNNER); // the operator's record has it

    const session = await signIn(org);
    const views = async () => [
      await call(`/job/${id}`, { key: org.key }),
      await call(`/predict/${id}`, { key: org.key }),
      await call("/jobs", { key: org.key }),
      await call("/predictions", { key: org.key }),
      await dashboardCall(session, `/api/job/${id}`),
      await dashboardCall(session, `/api/images/${image.id}/predictions`),
      await dashboardCall(session, `/images/${image.id}`),
    ];
    for (const response of await views()) {
      expect(response.status).toBe(200);
      const text = await response.text();
      expect(text, response.url).toContain(id);
      expect(text, response.url).not.toContain(RUNNER);
      expect(text, response.url).not.toContain("runner_id");
    }
    expect(await json(await call(`/job/${id}`, { key: org.key }))).toMatchObject({ status: "STARTED" });

    // Every lease runs out: the job FAILS with a reason that says what happened, not on which machine.
    for (let attempt = 1; ; attempt++) {
      await env.DB.prepare("UPDATE jobs SET lease_expires_at = ?1 WHERE id = ?2")
        .bind(Date.now() - 1, id)
        .run();
      if (attempt === 3) break;
      expect(await leaseAs(id)).toBe(attempt + 1);
    }
    expect((await runner("/jobs/lease", { runner_id: RUNNER, wait_seconds: 0 })).status).toBe(204); // the sweep ran
    const failed = await json<{ status: string; reason: string }>(await call(`/job/${id}`, { key: org.key }));
    expect(failed).toMatchObject({ status: "FAILED", reason: "Lease expired after attempt 3 (its runner stopped reporting)" });
    for (const response of await views()) expect(await response.text(), response.url).not.toContain(RUNNER);
  });
});
