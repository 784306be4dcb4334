// A whole slide's blocks as units of work: a prediction's plan becomes block tasks that any runner
// leases through the same lease protocol as jobs, organizations take turns, a block's failure is
// its prediction's, an ended prediction stops its blocks, and the last block sends it to its merge.
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { sweepJobs } from "../../worker/services/jobs.ts";
import { call, createOrg, json, type TestOrg, uploadImage } from "./helpers.ts";
import { leaseJob, runner } from "./runner-helpers.ts";

/** A plan of rows x columns blocks for the 8 x 6 test image (what a runner's survey would send). */
const plan = (rows: number, columns: number) => ({
  width: 8,
  height: 6,
  core_side: 4,
  margin: 1,
  rows,
  columns,
  diameter: 3,
  survey: { normalization: { low: [0], high: [1] } },
});

interface BlockLease {
  job_id: string;
  kind: string;
  attempt: number;
  lease_token: string;
  prediction_id: string;
  block: { index: number; total: number };
  plan: ReturnType<typeof plan>;
  output: { cells_url: string; preview_url?: string; full_url?: string };
}

async function predict(org: TestOrg, imageId?: string): Promise<string> {
  const image = imageId ? { id: imageId } : await uploadImage(org);
  const response = await call("/predict", { key: org.key, json: { image_id: image.id, model_id: "cpsam" } });
  expect(response.status).toBe(202);
  return (await json(response)).prediction_id as string;
}

/** Submits a prediction and completes its first attempt with a plan of `rows` x `columns` blocks. */
async function plannedPrediction(org: TestOrg, rows = 1, columns = 2): Promise<string> {
  const id = await predict(org);
  await completePlan(await leaseJob(id), rows, columns);
  return id;
}

async function completePlan(job: { job_id: string; lease_token: string }, rows: number, columns: number, extra: Record<string, unknown> = {}): Promise<void> {
  const planned = await runner(`/jobs/${job.job_id}/complete`, { lease_token: job.lease_token, result: { block_plan: { ...plan(rows, columns), ...extra } } });
  expect(planned.status).toBe(200);
}

/** What a runner asking for work gets now (null: nothing to do). */
async function lease(runnerId = "runner-a", waitSeconds = 0): Promise<BlockLease | null> {
  const response = await runner("/jobs/lease", { runner_id: runnerId, wait_seconds: waitSeconds });
  return response.status === 204 ? null : json<BlockLease>(response);
}

async function completeBlock(block: BlockLease, result: Record<string, unknown> = { block_cells: 2, kept_area: 10, glass: false }) {
  const put = await call(block.output.cells_url, { method: "PUT", body: new Uint8Array([1, 2, 3]), headers: { "Content-Length": "3" } });
  expect(put.status).toBe(200);
  return runner(`/jobs/${block.job_id}/complete`, { lease_token: block.lease_token, result });
}

const poll = async (org: TestOrg, id: string) => json(await call(`/predict/${id}`, { key: org.key }));
const blockRows = (predictionId: string) =>
  env.DB.prepare("SELECT block_index, status, attempts, reason FROM jobs WHERE parent_job_id = ? ORDER BY block_index")
    .bind(predictionId)
    .all<{ block_index: number; status: string; attempts: number; reason: string | null }>()
    .then((r) => r.results);

/** Leases every block there is to lease now, as runner `runnerId`. */
async function leaseAll(runnerId = "runner-a"): Promise<BlockLease[]> {
  const leased: BlockLease[] = [];
  for (let job = await lease(runnerId); job; job = await lease(runnerId)) leased.push(job);
  return leased;
}

describe("a block-wise prediction's blocks", () => {
  // Each test starts with no work waiting: what a runner leases is that test's alone.
  beforeEach(async () => {
    await env.DB.batch([env.DB.prepare("DELETE FROM jobs"), env.DB.prepare("DELETE FROM pull_queue_messages")]);
  });

  it("are leased by any runner, counted as they finish, and the last one sends the prediction to its merge", async () => {
    const org = await createOrg();
    const id = await plannedPrediction(org, 1, 2);
    expect(await poll(org, id)).toMatchObject({ status: "STARTED", blocks: { total: 2, done: 0, glass: 0 }, stage: "blocks 0 of 2" });

    const first = (await lease("runner-a"))!;
    const second = (await lease("runner-b"))!;
    expect([first.kind, second.kind]).toEqual(["block", "block"]);
    expect([first.block, second.block]).toEqual([
      { index: 0, total: 2 },
      { index: 1, total: 2 },
    ]);
    expect(first).toMatchObject({ prediction_id: id, plan: plan(1, 2) });
    // Nothing else is leased meanwhile: the prediction itself waits, held by no lease.
    expect(await lease("runner-c")).toBeNull();

    expect((await completeBlock(first)).status).toBe(200);
    expect(await poll(org, id)).toMatchObject({ status: "STARTED", blocks: { total: 2, done: 1 }, stage: "blocks 1 of 2" });
    expect((await completeBlock(second, { block_cells: 0, kept_area: 0, glass: true })).status).toBe(200);
    expect(await poll(org, id)).toMatchObject({ status: "SUBMITTED", blocks: { total: 2, done: 2, glass: 1 }, stage: "merging" });

    // The merge: the prediction again, with its blocks' parts in grid order and their results summed.
    const merge = await json<{ kind: string; merge: { parts: unknown[]; kept_area: number; glass_blocks: number }; output: { artifact_url: string } }>(
      await runner("/jobs/lease", { runner_id: "runner-c", wait_seconds: 1 }),
    );
    expect(merge).toMatchObject({ kind: "prediction", merge: { kept_area: 10, glass_blocks: 1 } });
    expect(merge.merge.parts).toHaveLength(2);
    const token = (merge as unknown as { lease_token: string }).lease_token;
    await call(merge.output.artifact_url, { method: "PUT", body: new Uint8Array([1, 2, 3, 4]), headers: { "Content-Length": "4" } });
    const done = await runner(`/jobs/${id}/complete`, { lease_token: token, result: { roi_count: 2, confluency: 0.2, width: 8, height: 6 } });
    expect(done.status).toBe(200);
    expect(await poll(org, id)).toMatchObject({ status: "COMPLETED", cell_count: 2, progress: 1, blocks: { total: 2, done: 2 } });
    // The parts were for the merge only.
    const parts = await env.BUCKET.list({ prefix: `orgs/${org.id}/segmentations/` });
    expect(parts.objects.map((o) => o.key).filter((k) => k.includes("/blocks/"))).toEqual([]);
  });

  it("come after any job in the queue, and organizations take turns at the rest", async () => {
    const busy = await createOrg();
    const other = await createOrg();
    const slide = await predict(busy);
    const theirs = await predict(other);
    // Both leased before either is planned (a lease finds blocks as soon as there are any).
    const [first, second] = [await leaseJob(slide), await leaseJob(theirs)];
    await completePlan(first, 2, 2);
    await completePlan(second, 1, 2);
    // The slide planned first leads; once one of its blocks runs, the other organization's turn
    // comes; with one block running each, the older slide's again.
    const leased = [(await lease("runner-a"))!, (await lease("runner-b"))!, (await lease("runner-c"))!];
    expect(leased.map((b) => b.prediction_id)).toEqual([slide, theirs, slide]);

    // A small prediction submitted while the slides' blocks wait is leased before any of them, once
    // its queue message is there (the local queue hands messages over in batches, a moment later).
    const small = await predict(await createOrg());
    for (let i = 0; i < 100; i++) {
      const waiting = await env.DB.prepare("SELECT count(*) AS n FROM pull_queue_messages WHERE body LIKE ?").bind(`%${small}%`).first<{ n: number }>();
      if (waiting!.n > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const next = await json<{ job_id: string; kind: string }>(await runner("/jobs/lease", { runner_id: "runner-d", wait_seconds: 1 }));
    expect(next).toMatchObject({ job_id: small, kind: "prediction" });
    for (const block of [...leased, ...(await leaseAll())]) expect((await completeBlock(block)).status).toBe(200);
    expect((await poll(busy, slide)).stage).toBe("merging");
  });

  it("fail their prediction with the reason when one fails for its input, and the others stop", async () => {
    const org = await createOrg();
    const id = await plannedPrediction(org, 1, 2);
    const [first, second] = await leaseAll();
    const failed = await runner(`/jobs/${first!.job_id}/fail`, { lease_token: first!.lease_token, reason: "tile 3 is corrupt", fault: "input" });
    expect(failed.status).toBe(200);
    expect(await poll(org, id)).toMatchObject({ status: "FAILED", reason: "Block 1 of 2 failed: tile 3 is corrupt" });
    // The other block's runner hears at its next heartbeat that its work is no longer wanted.
    const beat = await runner(`/jobs/${second!.job_id}/heartbeat`, { lease_token: second!.lease_token, progress: 0.5 });
    expect(beat.status).toBe(409);
    expect((await blockRows(id)).map((b) => b.status)).toEqual(["FAILED", "FAILED"]);
  });

  it("are redone when their runner stops reporting, and a block out of attempts fails the prediction", async () => {
    const org = await createOrg();
    const id = await plannedPrediction(org, 1, 1);
    for (let attempt = 1; attempt <= 3; attempt++) {
      const block = (await lease("runner-dies"))!;
      expect(block).toMatchObject({ kind: "block", attempt });
      await env.DB.prepare("UPDATE jobs SET lease_expires_at = ? WHERE id = ?")
        .bind(Date.now() - 1, block.job_id)
        .run();
      await sweepJobs(env);
    }
    const [row] = await blockRows(id);
    expect(row).toMatchObject({ status: "FAILED", attempts: 3 });
    expect(await poll(org, id)).toMatchObject({ status: "FAILED" });
    expect((await poll(org, id)).reason).toMatch(/^Block 1 of 1 failed: Lease expired after attempt 3/);
  });

  it("stop when their prediction runs past its time limit", async () => {
    const org = await createOrg();
    const id = await plannedPrediction(org, 1, 2);
    const [block] = await leaseAll();
    await env.DB.prepare("UPDATE jobs SET started_at = ? WHERE id = ?")
      .bind(Date.now() - 10 * 24 * 3600 * 1000, id)
      .run();
    await sweepJobs(env);
    expect(await poll(org, id)).toMatchObject({ status: "FAILED" });
    expect((await blockRows(id)).every((b) => b.status === "FAILED")).toBe(true);
    const beat = await runner(`/jobs/${block!.job_id}/heartbeat`, { lease_token: block!.lease_token });
    expect(beat.status).toBe(409);
  });

  it("are not jobs a client sees: neither polled nor listed", async () => {
    const org = await createOrg();
    const id = await plannedPrediction(org, 1, 1);
    const [block] = await leaseAll();
    expect((await call(`/job/${block!.job_id}`, { key: org.key })).status).toBe(404);
    expect((await call(`/predict/${block!.job_id}`, { key: org.key })).status).toBe(404);
    const listed = await json<{ items?: { job_id: string }[] }>(await call("/jobs", { key: org.key }));
    expect(JSON.stringify(listed)).not.toContain(block!.job_id);
    expect(JSON.stringify(listed)).toContain(id);
    await completeBlock(block!);
  });

  it("write the image's full-resolution level when their plan fixes how it is shown, once, and only when every block wrote its pack", async () => {
    const org = await createOrg();
    const imageId = (await uploadImage(org)).id;
    const display = { display: [{ low: 0, high: 255 }] };
    const put = (url: string, body: Uint8Array) => call(url, { method: "PUT", body, headers: { "Content-Length": String(body.length) } });
    /** Plans a prediction of the image in 1 x 2 blocks, leases them, and writes the packs of those in `packed`. */
    const plannedBlocks = async (packed: number[], extra: Record<string, unknown> = display) => {
      const id = await predict(org, imageId);
      await completePlan(await leaseJob(id), 1, 2, extra);
      const blocks = await leaseAll();
      for (const block of blocks)
        if (packed.includes(block.block.index)) expect((await put(block.output.full_url!, new Uint8Array([block.block.index]))).status).toBe(200);
      for (const block of blocks) expect((await completeBlock(block)).status).toBe(200);
      return { id, blocks };
    };
    type Merge = { lease_token: string; output: { artifact_url: string }; merge: { full_manifest_url?: string } };
    const mergeOf = async (id: string) => {
      const merge = await json<Merge>(await runner("/jobs/lease", { runner_id: "runner-m", wait_seconds: 1 }));
      await put(merge.output.artifact_url, new Uint8Array([1, 2, 3, 4]));
      return {
        merge,
        complete: async () => {
          const done = await runner(`/jobs/${id}/complete`, { lease_token: merge.lease_token, result: { roi_count: 2, confluency: 0.2, width: 8, height: 6 } });
          expect(done.status).toBe(200);
        },
      };
    };

    // A plan without a display (an older runner's) asks for no packs.
    const older = await plannedBlocks([], {});
    expect(older.blocks.map((b) => b.output.full_url)).toEqual([undefined, undefined]);
    await (await mergeOf(older.id)).complete();

    // One block wrote no pack (its tiles could not be made): the merge writes no manifest.
    const partial = await plannedBlocks([0]);
    expect(partial.blocks.every((b) => b.output.full_url !== undefined)).toBe(true);
    const unwritten = await mergeOf(partial.id);
    expect(unwritten.merge.merge.full_manifest_url).toBeUndefined();
    await unwritten.complete();

    // Every block wrote its pack, named by the grid's core side: the merge writes the manifest.
    const complete = await plannedBlocks([0, 1]);
    const stored = await env.BUCKET.list({ prefix: `orgs/${org.id}/images/${imageId}/full/` });
    expect(stored.objects.map((o) => o.key).sort()).toEqual([
      `orgs/${org.id}/images/${imageId}/full/4/0.tiles`,
      `orgs/${org.id}/images/${imageId}/full/4/1.tiles`,
    ]);
    const written = await mergeOf(complete.id);
    const manifestUrl = written.merge.merge.full_manifest_url!;
    expect(manifestUrl).toEqual(expect.any(String));
    expect((await put(manifestUrl, new TextEncoder().encode("{}"))).status).toBe(200);
    await written.complete();

    // The image has its level now: later predictions' blocks and merges are not asked again.
    const later = await plannedBlocks([]);
    expect(later.blocks.map((b) => b.output.full_url)).toEqual([undefined, undefined]);
    expect((await mergeOf(later.id)).merge.merge.full_manifest_url).toBeUndefined();
  });
});
