// Which label mask `segment` downloads: masks.png up to 65,535 cells, masks.tif above (where the
// service refuses masks.png), against a stand-in service answering through the client's Http.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { exportFile } from "../../client/exports.ts";
import { Http } from "../../client/http.ts";
import { collectInputs } from "../../client/inputs.ts";
import type { Display } from "../../client/progress.ts";
import { runSegment } from "../../client/segment-run.ts";

const PNG_SIGNATURE = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a);

const work = mkdtempSync(join(tmpdir(), "cellseg-masks-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const quiet: Display = {
  log: () => undefined,
  bar: () => ({ update: () => undefined, finish: () => undefined }),
  count: () => undefined,
  close: () => undefined,
};

/** A service whose every prediction finds `cells` cells; records the exports asked for. */
function service(cells: number): { fetch: typeof fetch; exports: string[] } {
  const exports: string[] = [];
  const reply = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
  const fake = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const path = new URL(String(input)).pathname.replace(/^\/api\/v1/, "");
    const method = init?.method ?? "GET";
    if (method === "POST" && path === "/upload") {
      await new Response(init?.body).arrayBuffer();
      return reply({ image: { id: "img_1", name: "cells.png", upload_status: "ready" } }, 201);
    }
    if (method === "POST" && path === "/predict") return reply({ prediction_id: "pred_1", status: "submitted" });
    if (path === "/predict/pred_1") return reply({ prediction_id: "pred_1", status: "COMPLETED", progress: 1, segmentation_id: "seg_1", cell_count: cells });
    const file = path.match(/^\/export\/seg_1\/(.+)$/)?.[1];
    if (file) {
      exports.push(file);
      if (file === "masks.png" && cells > 65_535) return reply({ detail: `This segmentation has ${cells} cells; ...` }, 422);
      return new Response(`contents of ${file}`);
    }
    // No file of this organization has the same SHA-256: the client uploads it.
    if (method === "GET" && path === "/images") return reply({ items: [], next_cursor: null });
    return reply({ detail: `unexpected ${method} ${path}` }, 404);
  };
  return { fetch: fake as typeof fetch, exports };
}

async function segmentWith(cells: number): Promise<{ exports: string[]; saved: string[] }> {
  const folder = join(work, `in-${cells}`);
  mkdirSync(folder, { recursive: true });
  // A PNG signature is all the client reads of it before this service takes it.
  writeFileSync(join(folder, "cells.png"), PNG_SIGNATURE);
  const out = join(work, `out-${cells}`);
  const { fetch, exports } = service(cells);
  const http = new Http({ api: "http://cellseg.test/api/v1", key: "csk_test", fetch, retry: { attempts: 1, baseMs: 1, maxMs: 1 } });
  const outcomes = await runSegment(
    http,
    {
      inputs: collectInputs([folder], out),
      out,
      modelId: "cpsam",
      params: {},
      formats: ["csv", "masks"],
      resumableAbove: 1 << 30,
      bodyLimit: 1 << 30,
      wait: { pollMs: 1, maxPollMs: 1 },
    },
    quiet,
  );
  expect(outcomes).toHaveLength(1);
  const outcome = outcomes[0]!;
  expect(outcome.error).toBeNull();
  expect(outcome.ok).toBe(true);
  const dir = join(out, outcome.input.folder);
  return { exports, saved: readdirSync(dir).sort() };
}

describe("segment's label mask", () => {
  it("is masks.png up to 65,535 cells", async () => {
    expect(await segmentWith(65_535)).toEqual({ exports: ["measurements.csv", "masks.png"], saved: ["masks.png", "measurements.csv"] });
  });

  it("is masks.tif above 65,535 cells, never asking for masks.png", async () => {
    const { exports, saved } = await segmentWith(70_000);
    expect(exports).toEqual(["measurements.csv", "masks.tif"]);
    expect(saved).toEqual(["masks.tif", "measurements.csv"]);
    expect(readFileSync(join(work, "out-70000", "cells", "masks.tif"), "utf8")).toBe("contents of masks.tif");
    expect(existsSync(join(work, "out-70000", "cells", "masks.png"))).toBe(false);
  });

  it("names the file from the cell count", () => {
    expect([exportFile("masks", 0), exportFile("masks", 65_535), exportFile("masks", 65_536), exportFile("zip", 70_000)]).toEqual([
      "masks.png",
      "masks.png",
      "masks.tif",
      "rois.zip",
    ]);
  });
});
