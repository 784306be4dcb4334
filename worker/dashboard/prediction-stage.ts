// What a prediction's row on the image page says beside its progress bar, as the page's script
// (public/dashboard/assets/prediction-stage.js) says it when it polls: its stage, and for a whole
// slide segmented block by block, the blocks done of all and how many of them were glass.
// test/worker/dashboard-prediction-stage.test.ts holds the two to the same words.

// Exported for its test only (test/worker/dashboard-prediction-stage.test.ts).
export interface StageOf {
  status: string;
  stage?: string | null;
  reason?: string | null;
  blocks?: { total: number; done: number; glass: number } | null;
}

/** The stage the service gives a block-wise prediction while its blocks run: "blocks 7 of 12". */
const BLOCKS_STAGE = /^blocks \d+ of \d+$/;

export function predictionStage(p: StageOf): string {
  if (p.status === "FAILED") return p.reason ?? "failed";
  const stage = p.stage ?? "";
  const b = p.blocks;
  if (!b) return stage;
  const done = `blocks ${b.done} of ${b.total} done (${b.glass} glass)`;
  if (stage === "" || BLOCKS_STAGE.test(stage)) return done;
  const all = `${b.total} block${b.total === 1 ? "" : "s"}, ${b.glass === 0 ? "none" : b.glass} of them glass`;
  return `${stage} · ${b.done < b.total ? done : all}`;
}
