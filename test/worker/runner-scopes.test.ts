// A runner token scoped to named organizations (`npm run admin -- runner-token create <slug>`): a
// lab's own runner leases only its organizations' jobs and gets URLs to nothing else, while the
// fleet's tokens keep leasing every organization's.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createRunnerToken, revokeRunnerToken } from "../../worker/operator/runner-tokens.ts";
import { database } from "../../worker/storage/database.ts";
import { call, createOrg, json, type TestOrg, uploadImage } from "./helpers.ts";
import { type Lease, leaseJob } from "./runner-helpers.ts";

async function submit(org: TestOrg): Promise<string> {
  const image = await uploadImage(org);
  return (await json(await call("/predict", { key: org.key, json: { image_id: image.id, model_id: "cpsam" } }))).prediction_id as string;
}

const asRunner = (token: string, path: string, body: unknown) => call(`/internal${path}`, { key: token, json: body });

async function leaseWith(token: string): Promise<Lease | null> {
  const response = await asRunner(token, "/jobs/lease", { runner_id: "lab-gpu", wait_seconds: 1 });
  expect([200, 204]).toContain(response.status);
  return response.status === 204 ? null : json<Lease>(response);
}

describe("a runner token scoped to an organization", () => {
  it("leases that organization's jobs and never another's, which the fleet's runners still take", async () => {
    const lab = await createOrg();
    const other = await createOrg();
    const { token } = await createRunnerToken(database(env.DB), [lab.slug]);
    expect(token).toMatch(/^csr_[0-9a-f]{64}$/);
    const othersJob = await submit(other);
    const labsJob = await submit(lab);

    const leased = await leaseWith(token);
    expect(leased).toMatchObject({ job_id: labsJob, kind: "prediction" });
    // The other organization's job is queued first, and stays for the fleet.
    expect(await leaseWith(token)).toBeNull();
    expect(await leaseJob(othersJob, "fleet-runner")).toMatchObject({ job_id: othersJob });

    // Its lease works as any runner's: a heartbeat, fresh URLs, its output.
    expect((await asRunner(token, `/jobs/${labsJob}/heartbeat`, { lease_token: leased!.lease_token, progress: 0.5, stage: "network" })).status).toBe(200);
    expect((await asRunner(token, `/jobs/${labsJob}/urls`, { lease_token: leased!.lease_token })).status).toBe(200);
  });

  it("is answered as if another organization's job did not exist, whatever lease token it holds, and reaches no public route", async () => {
    const lab = await createOrg();
    const other = await createOrg();
    const { token } = await createRunnerToken(database(env.DB), [lab.slug]);
    const othersJob = await submit(other);
    const fleetLease = await leaseJob(othersJob, "fleet-runner");
    for (const action of ["heartbeat", "urls", "complete", "fail", "release"]) {
      const result = { roi_count: 1, confluency: 0.1, width: 8, height: 6, diameter: 10 };
      const response = await asRunner(token, `/jobs/${othersJob}/${action}`, { lease_token: fleetLease.lease_token, progress: 0.1, reason: "x", result });
      expect([action, response.status]).toEqual([action, 404]);
      expect(await json(response)).toEqual({ detail: `Job with id ${othersJob} not found` });
    }
    expect((await call("/models", { key: token })).status).toBe(403);
  });

  it("names several organizations when made for several, and stops working once revoked", async () => {
    const first = await createOrg();
    const second = await createOrg();
    const { id, token } = await createRunnerToken(database(env.DB), [first.slug, second.slug]);
    const jobs = [await submit(first), await submit(second)];
    const leased = [await leaseWith(token), await leaseWith(token)].map((lease) => lease?.job_id);
    expect(leased.sort()).toEqual([...jobs].sort());
    await revokeRunnerToken(database(env.DB), id);
    const refused = await asRunner(token, "/jobs/lease", { runner_id: "lab-gpu", wait_seconds: 0 });
    expect(refused.status).toBe(401);
  });
});
