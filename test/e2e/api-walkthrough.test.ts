// The curl walkthrough of docs/api.md, run as a reader would paste it: the block is read from the
// doc, not copied here, so the test fails as soon as the doc's commands stop working.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalStack, startStack } from "../../scripts/local-stack.ts";
import { encodeTiff } from "../fixtures/tiff-writer.ts";
import { syntheticNuclei } from "../fixtures/nuclei-grid.ts";

let stack: LocalStack;
const folder = mkdtempSync(join(tmpdir(), "cellseg-walkthrough-"));

beforeAll(async () => {
  stack = await startStack();
  stack.startRunner();
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  rmSync(folder, { recursive: true, force: true });
}, 60_000);

/** The first ```sh block after the heading "## A walkthrough with curl" of docs/api.md. */
function walkthrough(): string {
  const doc = readFileSync("docs/api.md", "utf8");
  const section = doc.indexOf("\n## A walkthrough with curl\n");
  expect(section).toBeGreaterThan(-1);
  const start = doc.indexOf("```sh\n", section) + "```sh\n".length;
  return doc.slice(start, doc.indexOf("\n```", start));
}

describe("the curl walkthrough of docs/api.md", () => {
  it("runs top to bottom against the local stack: uploads twice, segments, exports every format and imports a correction", async () => {
    const { data, count } = syntheticNuclei(320, 240);
    writeFileSync(join(folder, "cells.tif"), encodeTiff([{ width: 320, height: 240, samplesPerPixel: 1, values: data, kind: "uint16" }]));
    // bash -e: a command that fails (a JSON answer without the field asked for, say) stops the walkthrough.
    const { stdout } = await promisify(execFile)("bash", ["-euo", "pipefail", "-c", walkthrough()], {
      cwd: folder,
      env: { ...process.env, CELLSEG_API: stack.api, CELLSEG_KEY: stack.key },
      timeout: 150_000,
    });

    const prediction = JSON.parse(readFileSync(join(folder, "prediction.json"), "utf8"));
    expect(prediction.status).toBe("COMPLETED");
    expect(prediction.cell_count).toBeGreaterThanOrEqual(Math.round(count * 0.8));
    const cells = prediction.cell_count as number;
    // The prediction ran on the second (resumable) upload, the $ID that step 5 imports against.
    const images = stack.sql("SELECT id FROM images ORDER BY created_at") as { id: string }[];
    expect(images).toHaveLength(2);

    expect(readFileSync(join(folder, "measurements.csv"), "utf8").trim().split("\n")).toHaveLength(cells + 1);
    expect(JSON.parse(readFileSync(join(folder, "rois.geojson"), "utf8")).features).toHaveLength(cells);
    expect(readFileSync(join(folder, "rois.zip")).subarray(0, 2).toString("latin1")).toBe("PK");
    expect([...readFileSync(join(folder, "masks.png")).subarray(1, 4)]).toEqual([0x50, 0x4e, 0x47]);
    expect(readFileSync(join(folder, "masks.tif")).subarray(0, 2).toString("latin1")).toBe("II");
    expect(stdout).toMatch(/^roi_id,area_px\r?$/m);
    const shapes = readFileSync(join(folder, "shapes.csv"), "utf8").trim().split("\n");
    expect(shapes).toHaveLength(cells + 1);
    expect(shapes[0]).toMatch(/^roi_id,.*solidity.*,intensity_c0_mean,/);

    const imported = JSON.parse(stdout.trim().split("\n").at(-1)!);
    expect(imported).toMatchObject({ image_id: images[1]!.id, source: "import", cell_count: cells });
  }, 240_000);
});
