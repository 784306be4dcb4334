// What a prediction's row on the image page says beside its progress bar: the server's render
// (worker/dashboard/prediction-stage.ts) and the page's script polling /predict/{id}
// (assets/prediction-stage.js) word it alike: the stage, and for a whole slide segmented block by
// block, the blocks done of all and how many were glass, which the page shows from the job's row.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
// The page's script is plain JS, type-checked from its JSDoc by tsc -p worker/dashboard/public, not here.
// @ts-expect-error TS7016: the worker's tsconfig reads no JavaScript, so the module has no types here
import * as script from "../../worker/dashboard/public/dashboard/assets/prediction-stage.js";
import { predictionStage as serverRender, type StageOf } from "../../worker/dashboard/prediction-stage.ts";
import { dashboardCall, signIn } from "./dashboard-helpers.ts";
import { call, createOrg, json, uploadImage } from "./helpers.ts";

const pageScript: (p: StageOf) => string = script.predictionStage;

const blocks = (total: number, done: number, glass: number) => ({ total, done, glass });

const CASES: [StageOf, string][] = [
  [{ status: "SUBMITTED", stage: "queued", blocks: null }, "queued"],
  [{ status: "STARTED", stage: "network" }, "network"],
  [{ status: "STARTED", stage: null }, ""],
  [{ status: "STARTED", stage: "blocks 0 of 12", blocks: blocks(12, 0, 0) }, "blocks 0 of 12 done (0 glass)"],
  [{ status: "STARTED", stage: "blocks 7 of 12", blocks: blocks(12, 7, 3) }, "blocks 7 of 12 done (3 glass)"],
  [{ status: "SUBMITTED", stage: "merging", blocks: blocks(12, 12, 3) }, "merging · 12 blocks, 3 of them glass"],
  [{ status: "STARTED", stage: "leased", blocks: blocks(12, 11, 3) }, "leased · blocks 11 of 12 done (3 glass)"],
  [{ status: "COMPLETED", stage: "done", blocks: blocks(12, 12, 0) }, "done · 12 blocks, none of them glass"],
  [{ status: "COMPLETED", stage: "done", blocks: null }, "done"],
  [
    { status: "FAILED", stage: "blocks 3 of 12", reason: "Block 4 of 12 failed: out of memory", blocks: blocks(12, 3, 1) },
    "Block 4 of 12 failed: out of memory",
  ],
  [{ status: "FAILED", stage: null, reason: null }, "failed"],
];

describe("a prediction's stage on the image page", () => {
  it("counts a whole slide's blocks done of all and the glass among them, alike on the server and in the page", () => {
    for (const [prediction, said] of CASES) {
      expect(serverRender(prediction), JSON.stringify(prediction)).toBe(said);
      expect(pageScript(prediction), JSON.stringify(prediction)).toBe(said);
    }
  });

  it("is what the image page shows of a block-wise prediction, from the record /predict/{id} gives the page's script", async () => {
    const org = await createOrg();
    const image = await uploadImage(org);
    const { prediction_id: id } = await json<{ prediction_id: string }>(
      await call("/predict", { key: org.key, json: { image_id: image.id, model_id: "cpsam" } }),
    );
    // Its blocks as the service counts them while they run (block-tasks.ts): 7 of 12 done, 3 of them glass.
    await env.DB.prepare(
      "UPDATE jobs SET status = 'STARTED', blocks_total = 12, blocks_done = 7, blocks_glass = 3, progress = 0.55, stage = 'blocks 7 of 12' WHERE id = ?1",
    )
      .bind(id)
      .run();
    const record = await json<StageOf>(await call(`/predict/${id}`, { key: org.key }));
    expect(record).toMatchObject({ stage: "blocks 7 of 12", blocks: { total: 12, done: 7, glass: 3 } });
    expect(pageScript(record)).toBe("blocks 7 of 12 done (3 glass)");
    const page = await (await dashboardCall(await signIn(org), `/images/${image.id}`)).text();
    expect(page).toContain('<span class="stage muted">blocks 7 of 12 done (3 glass)</span>');
  });
});
