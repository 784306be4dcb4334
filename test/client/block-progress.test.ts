// A whole slide segmented block by block, as `segment` shows it: the progress line counts the blocks
// done of all and how many were glass (a log gets a line at each quarter and each new stage, not
// one per block), the image's closing line and the summary table say how many blocks and how many
// glass, and the resume state keeps them for a run that only fetches missing exports. Against a
// stand-in service answering through the client's Http.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { Http } from "../../client/http.ts";
import { collectInputs } from "../../client/inputs.ts";
import { blocksDone, blocksSummary, predictionNote } from "../../client/predict.ts";
import { createDisplay, type Display } from "../../client/progress.ts";
import { runSegment } from "../../client/segment-run.ts";
import { summaryTable } from "../../client/summary.ts";

const PNG_SIGNATURE = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a);

const work = mkdtempSync(join(tmpdir(), "cellseg-blocks-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const blocks = (done: number, glass: number) => ({ total: 4, done, glass });

/** What GET /predict/pred_1 answers, one after another (the last one from then on). */
const POLLS = [
  { status: "SUBMITTED", progress: 0, stage: "queued", blocks: null },
  { status: "STARTED", progress: 0.05, stage: "blocks 0 of 4", blocks: blocks(0, 0) },
  { status: "STARTED", progress: 0.26, stage: "blocks 1 of 4", blocks: blocks(1, 1) },
  { status: "STARTED", progress: 0.48, stage: "blocks 2 of 4", blocks: blocks(2, 1) },
  { status: "STARTED", progress: 0.69, stage: "blocks 3 of 4", blocks: blocks(3, 2) },
  { status: "SUBMITTED", progress: 0.9, stage: "merging", blocks: blocks(4, 2) },
  { status: "STARTED", progress: 0.95, stage: "merging", blocks: blocks(4, 2) },
  { status: "COMPLETED", progress: 1, stage: "done", blocks: blocks(4, 2), segmentation_id: "seg_1", cell_count: 1234 },
];

/** A service whose one prediction runs as POLLS say; `exportsFail` refuses the exports (a run to resume). */
function service(options: { exportsFail?: boolean } = {}): Http {
  let poll = 0;
  const reply = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
  const fake = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const path = new URL(String(input)).pathname.replace(/^\/api\/v1/, "");
    const method = init?.method ?? "GET";
    if (method === "POST" && path === "/upload") {
      await new Response(init?.body).arrayBuffer();
      return reply({ image: { id: "img_1", name: "slide.png", upload_status: "ready" } }, 201);
    }
    if (method === "POST" && path === "/predict") return reply({ prediction_id: "pred_1", status: "SUBMITTED" });
    if (path === "/predict/pred_1")
      return reply({ prediction_id: "pred_1", segmentation_id: null, cell_count: null, ...POLLS[Math.min(poll++, POLLS.length - 1)] });
    if (path === "/segmentation/seg_1") return reply({ id: "seg_1" });
    if (path.startsWith("/export/seg_1/")) return options.exportsFail ? reply({ detail: "storage is down" }, 400) : new Response("contents");
    // No file of this organization has the same SHA-256: the client uploads it.
    if (method === "GET" && path === "/images") return reply({ items: [], next_cursor: null });
    return reply({ detail: `unexpected ${method} ${path}` }, 404);
  };
  return new Http({ api: "http://cellseg.test/api/v1", key: "csk_test", fetch: fake as typeof fetch, retry: { attempts: 1, baseMs: 1, maxMs: 1 } });
}

/** A display recording each bar update (its note and detail) and every line. */
function recording(): { display: Display; updates: string[]; lines: string[] } {
  const updates: string[] = [];
  const lines: string[] = [];
  const display: Display = {
    log: (message) => lines.push(message),
    bar: (label) => ({
      update: (done, note, detail) => {
        if (label.startsWith("predict")) updates.push(`${done} | ${note ?? ""} | ${detail ?? ""}`);
      },
      finish: (message) => lines.push(message),
    }),
    count: () => undefined,
    close: () => undefined,
  };
  return { display, updates, lines };
}

function segment(name: string, http: Http, display: Display) {
  const folder = join(work, `in-${name}`);
  mkdirSync(folder, { recursive: true });
  // A PNG signature is all the client reads of it before this service takes it.
  writeFileSync(join(folder, "slide.png"), PNG_SIGNATURE);
  const out = join(work, `out-${name}`);
  const options = {
    inputs: collectInputs([folder], out),
    out,
    modelId: "cpsam",
    params: {},
    formats: ["csv" as const],
    resumableAbove: 1 << 30,
    bodyLimit: 1 << 30,
    wait: { pollMs: 1, maxPollMs: 1 },
  };
  return { out, run: () => runSegment(http, options, display) };
}

describe("a block-wise prediction in the client", () => {
  it("words the blocks while they run and once they have", () => {
    expect(blocksDone({ total: 12, done: 7, glass: 3 })).toBe("blocks 7 of 12 done (3 glass)");
    expect(blocksSummary({ total: 12, glass: 3 })).toBe("12 blocks, 3 of them glass");
    expect(blocksSummary({ total: 12, glass: 0 })).toBe("12 blocks, none of them glass");
    expect(predictionNote({ status: "STARTED", stage: "blocks 7 of 12", blocks: { total: 12, done: 7, glass: 3 } })).toEqual({
      note: "STARTED",
      detail: "blocks 7 of 12 done (3 glass)",
    });
    expect(predictionNote({ status: "STARTED", stage: "merging", blocks: { total: 12, done: 12, glass: 3 } })).toEqual({ note: "STARTED merging" });
    // An image segmented in one pass: status and stage, as before blocks (absent or null).
    expect(predictionNote({ status: "STARTED", stage: "network" })).toEqual({ note: "STARTED network" });
    expect(predictionNote({ status: "SUBMITTED", stage: null, blocks: null })).toEqual({ note: "SUBMITTED" });
  });

  it("shows the blocks done in the progress line, and how many blocks and glass at the end", async () => {
    const { display, updates, lines } = recording();
    const { out, run } = segment("run", service(), display);
    const [outcome] = await run();
    expect(outcome).toMatchObject({ ok: true, cellCount: 1234, blocks: { total: 4, glass: 2 } });
    expect(updates).toEqual([
      "0 | SUBMITTED queued | ",
      "0.05 | STARTED | blocks 0 of 4 done (0 glass)",
      "0.26 | STARTED | blocks 1 of 4 done (1 glass)",
      "0.48 | STARTED | blocks 2 of 4 done (1 glass)",
      "0.69 | STARTED | blocks 3 of 4 done (2 glass)",
      "0.9 | SUBMITTED merging | ",
      "0.95 | STARTED merging | ",
      "1 | COMPLETED done | ",
    ]);
    expect(lines).toContain("slide.png: 1234 cells (prediction pred_1; 4 blocks, 2 of them glass)");
    const table = summaryTable([outcome!], out);
    expect(table).toMatch(
      new RegExp(`slide\\.png\\s+img_1\\s+done\\s+1234\\s+[\\d.]+ s\\s+${join(out, "slide").replaceAll(".", "\\.")} \\(4 blocks, 2 of them glass\\)`),
    );
  });

  it("keeps the blocks in the resume state for a run that only fetches the exports", async () => {
    const first = segment("resumed", service({ exportsFail: true }), recording().display);
    const [failed] = await first.run();
    expect(failed).toMatchObject({ ok: false, blocks: { total: 4, glass: 2 } });
    const again = segment("resumed", service(), recording().display);
    const [outcome] = await again.run();
    expect(outcome).toMatchObject({ ok: true, cellCount: 1234, blocks: { total: 4, glass: 2 } });
    expect(summaryTable([outcome!], again.out)).toContain("(4 blocks, 2 of them glass)");
  });

  it("in a log: a line per quarter and per stage, each with the blocks done, never one per block", () => {
    const sink = new PassThrough();
    let text = "";
    sink.on("data", (chunk) => (text += chunk));
    const bar = createDisplay(sink).bar("predict slide.tif", 1, "fraction");
    bar.update(0.05, "STARTED", blocksDone({ total: 40, done: 0, glass: 0 }));
    for (let done = 1; done <= 40; done++) bar.update(0.05 + (0.85 * done) / 40, "STARTED", blocksDone({ total: 40, done, glass: Math.floor(done / 4) }));
    bar.update(0.95, "STARTED merging");
    expect(text.trim().split("\n")).toEqual([
      "predict slide.tif: 5% STARTED blocks 0 of 40 done (0 glass)",
      "predict slide.tif: 26% STARTED blocks 10 of 40 done (2 glass)",
      "predict slide.tif: 52% STARTED blocks 22 of 40 done (5 glass)",
      "predict slide.tif: 75% STARTED blocks 33 of 40 done (8 glass)",
      "predict slide.tif: 95% STARTED merging",
    ]);
  });
});
