// @ts-check
// What a prediction's row says beside its progress bar: its stage, and for a whole slide segmented
// block by block, the blocks done of all and how many of them were glass (no signal: the network
// skipped them). Pure, so the image page's server render (worker/dashboard/prediction-stage.ts, the
// same words) and this script say the same; test/worker/dashboard-prediction-stage.test.ts holds
// the two to it.

/** @typedef {{ total: number, done: number, glass: number }} Blocks */

/** The stage the service gives a block-wise prediction while its blocks run: "blocks 7 of 12". */
const BLOCKS_STAGE = /^blocks \d+ of \d+$/;

/**
 * @param {{ status: string, stage?: string | null, reason?: string | null, blocks?: Blocks | null }} p
 * @returns {string}
 */
export function predictionStage(p) {
  if (p.status === "FAILED") return p.reason ?? "failed";
  const stage = p.stage ?? "";
  const b = p.blocks;
  if (!b) return stage;
  const done = `blocks ${b.done} of ${b.total} done (${b.glass} glass)`;
  if (stage === "" || BLOCKS_STAGE.test(stage)) return done;
  const all = `${b.total} block${b.total === 1 ? "" : "s"}, ${b.glass === 0 ? "none" : b.glass} of them glass`;
  return `${stage} · ${b.done < b.total ? done : all}`;
}
