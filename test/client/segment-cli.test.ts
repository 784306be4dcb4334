// The client CLI against the real local stack (wrangler dev + a CPU runner with the committed cpsam):
// a folder segmented end to end, a resumable upload surviving a failed part, a run interrupted and
// resumed without repeating work, the one-prediction-at-a-time rule waited out, and a bad file
// failing the exit status without stopping the others.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { encode as encodePng } from "fast-png";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MEASUREMENT_COLUMN_NAMES } from "../../schema/measurements.ts";
import { type LocalStack, startStack } from "../../scripts/local-stack.ts";
import { segmentCommand } from "../../client/commands/segment.ts";
import { Http } from "../../client/http.ts";
import { STATE_FILE } from "../../client/resume-state.ts";
import { UploadFailedError, uploadImage } from "../../client/upload.ts";
import { syntheticNuclei } from "../e2e/stack.ts";
import { encodeTiff } from "../engine/helpers/tiff-writer.ts";

let stack: LocalStack;
let work: string;

beforeAll(async () => {
  stack = await startStack();
  stack.startRunner();
  work = mkdtempSync(join(tmpdir(), "cellseg-client-"));
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
}, 60_000);

const MiB = 1024 * 1024;

function nucleiPng(width: number, height: number): Uint8Array {
  const { data } = syntheticNuclei(width, height);
  return encodePng({ width, height, data, depth: 16, channels: 1 });
}

/** A 16-bit TIFF of synthetic nuclei, padded with bytes the TIFF does not reference to `padTo`. */
function nucleiTiff(width: number, height: number, padTo = 0): Uint8Array {
  const { data } = syntheticNuclei(width, height);
  const tiff = encodeTiff([{ width, height, samplesPerPixel: 1, values: data, kind: "uint16" }]);
  if (padTo <= tiff.length) return tiff;
  const padded = new Uint8Array(padTo);
  padded.set(tiff);
  for (let i = tiff.length; i < padTo; i++) padded[i] = i % 251;
  return padded;
}

function folderOf(name: string, files: Record<string, Uint8Array | string>): string {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  for (const [file, bytes] of Object.entries(files)) writeFileSync(join(dir, file), bytes);
  return dir;
}

const env = () => ({ ...process.env, CELLSEG_API: stack.api, CELLSEG_KEY: stack.key });

/** Runs `npm run client -- segment ...` as a user would; `until` may stop it part way (SIGINT). */
function runClient(args: string[], until?: () => boolean): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ["client/main.ts", ...args], { env: env(), stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  const watch =
    until &&
    setInterval(() => {
      if (until()) {
        clearInterval(watch);
        child.kill("SIGINT");
      }
    }, 50);
  return new Promise((resolve) =>
    child.on("exit", (code) => {
      if (watch) clearInterval(watch);
      resolve({ code, output });
    }),
  );
}

async function api<T>(path: string): Promise<T> {
  const response = await fetch(stack.api + path, { headers: { Authorization: `Bearer ${stack.key}` } });
  expect(response.status, path).toBe(200);
  return (await response.json()) as T;
}

/** How many images and predictions the organization has, every page counted. */
async function counts(): Promise<{ images: number; predictions: number }> {
  const all = async (path: string) => {
    let n = 0;
    let cursor: string | null = null;
    do {
      const page: { items: unknown[]; next_cursor: string | null } = await api(`${path}?limit=200${cursor ? `&cursor=${cursor}` : ""}`);
      n += page.items.length;
      cursor = page.next_cursor;
    } while (cursor);
    return n;
  };
  return { images: await all("/images"), predictions: await all("/predictions") };
}

const ZIP_SIGNATURE = [0x50, 0x4b];
const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

function expectExports(dir: string): number {
  const csv = readFileSync(join(dir, "measurements.csv"), "utf8").trim().split(/\r?\n/);
  expect(csv[0]!.split(",")).toEqual(MEASUREMENT_COLUMN_NAMES);
  const geojson = JSON.parse(readFileSync(join(dir, "rois.geojson"), "utf8")) as { type: string; features: { geometry: { type: string } }[] };
  expect(geojson.type).toBe("FeatureCollection");
  expect(geojson.features).toHaveLength(csv.length - 1);
  expect(geojson.features.every((f) => f.geometry.type === "Polygon")).toBe(true);
  expect([...readFileSync(join(dir, "rois.zip")).subarray(0, 2)]).toEqual(ZIP_SIGNATURE);
  expect([...readFileSync(join(dir, "masks.png")).subarray(0, 8)]).toEqual(PNG_SIGNATURE);
  return csv.length - 1;
}

describe("npm run client -- segment", () => {
  let firstFolder: string;
  let firstOut: string;

  it("segments a folder of three images: all four exports of each on disk, a summary, exit 0", async () => {
    firstFolder = folderOf("three", {
      "a.tif": nucleiTiff(200, 160),
      "b.png": nucleiPng(160, 160),
      "c.tiff": nucleiTiff(128, 192),
      "notes.txt": "not an image, not picked up",
    });
    firstOut = join(work, "three-out");
    const before = await counts();
    const { code, output } = await runClient(["segment", firstFolder, "--out", firstOut, "--poll", "0.2"]);
    expect(code, output).toBe(0);
    for (const image of ["a", "b", "c"]) expect(expectExports(join(firstOut, image))).toBeGreaterThan(5);
    expect(output).toMatch(/3 of 3 images segmented/);
    expect(output).not.toContain(stack.key);
    expect(await counts()).toEqual({ images: before.images + 3, predictions: before.predictions + 3 });
  }, 240_000);

  it("fails the exit status when one file is not an image, and still finishes the rest", async () => {
    const withBadFile = folderOf("with-bad-file", { "broken.tif": "this is text, not a TIFF" });
    const before = await counts();
    // The three from before are already done in this --out; only the broken file is new work.
    const { code, output } = await runClient(["segment", firstFolder, join(withBadFile, "broken.tif"), "--out", firstOut, "--poll", "0.2"]);
    expect(code, output).toBe(1);
    expect(output).toMatch(/broken\.tif\s+FAILED\s+.*upload: File is not a supported image/);
    expect(output).toMatch(/3 of 4 images segmented, 1 failed/);
    expect(output.match(/already done/g)).toHaveLength(3);
    // Nothing was uploaded or predicted again, and the refused file left no record behind.
    expect(await counts()).toEqual(before);
  }, 120_000);

  it("resumes an interrupted run: the second run uploads and predicts nothing already done", async () => {
    const folder = folderOf("interrupted", { "d.tif": nucleiTiff(192, 192), "e.tif": nucleiTiff(160, 200), "f.png": nucleiPng(176, 176) });
    const out = join(work, "interrupted-out");
    const stateFile = join(out, STATE_FILE);
    const before = await counts();
    const predicted = () => existsSync(stateFile) && readFileSync(stateFile, "utf8").includes("prediction_id");
    const first = await runClient(["segment", folder, "--out", out, "--poll", "0.2"], predicted);
    expect(first.code, first.output).toBe(130);
    expect(first.output).toContain("Run the same command again to resume");

    const second = await runClient(["segment", folder, "--out", out, "--poll", "0.2"]);
    expect(second.code, second.output).toBe(0);
    for (const image of ["d", "e", "f"]) expectExports(join(out, image));
    // Three images, three predictions in all: the second run reused what the first had done.
    expect(await counts()).toEqual({ images: before.images + 3, predictions: before.predictions + 3 });

    rmSync(join(out, "e", "rois.zip"));
    const third = await runClient(["segment", folder, "--out", out, "--poll", "0.2"]);
    expect(third.code, third.output).toBe(0);
    expect(existsSync(join(out, "e", "rois.zip"))).toBe(true);
    expect(third.output).not.toMatch(/uploaded as/);
    expect(await counts()).toEqual({ images: before.images + 3, predictions: before.predictions + 3 });
  }, 300_000);
});

/** The part number a signed part URL is for (worker-signed URLs say `part`, R2's `partNumber`). */
const partOf = (url: string) => new URL(url).searchParams.get("part") ?? new URL(url).searchParams.get("partNumber");

/** fetch that fails the first PUT of `part` (the connection drops) and records every part PUT. */
function faultyFetch(part: number) {
  const puts: { url: string; authorization: string | null }[] = [];
  let failed = false;
  const wrapped: typeof fetch = async (input, init) => {
    const url = String(input);
    if (init?.method === "PUT") {
      puts.push({ url, authorization: new Headers(init.headers).get("Authorization") });
      if (!failed && partOf(url) === String(part)) {
        failed = true;
        throw new TypeError("fetch failed: socket hang up");
      }
    }
    return fetch(input, init);
  };
  return { fetch: wrapped, puts, failedOnce: () => failed };
}

describe("the client's uploads and waiting", () => {
  const fastRetry = { attempts: 4, baseMs: 50, maxMs: 200 };

  it("uploads in parts above the threshold, retries the part that failed, and sends no key with parts", async () => {
    const file = join(work, "big.tif");
    const bytes = nucleiTiff(64, 64, 9 * MiB);
    writeFileSync(file, bytes);
    const faults = faultyFetch(2);
    const http = new Http({ api: stack.api, key: stack.key, fetch: faults.fetch, retry: fastRetry });
    let sent = 0;
    const states: unknown[] = [];
    const image = await uploadImage(
      http,
      { path: file, name: "big.tif", size: bytes.length },
      {
        resumableAbove: MiB,
        bodyLimit: 100_000_000,
        pollMs: 100,
        onBytes: (delta) => (sent += delta),
        onState: (state) => states.push(state),
      },
    );
    expect(image).toMatchObject({ name: "big.tif", upload_status: "ready", width: 64, height: 64, size: bytes.length });
    expect(faults.failedOnce()).toBe(true);
    const partsPut = faults.puts.map((p) => partOf(p.url));
    expect(partsPut.sort()).toEqual(["1", "2", "2"]);
    expect(faults.puts.every((p) => p.authorization === null)).toBe(true);
    expect(sent).toBe(bytes.length);
    expect(states.at(-1)).toEqual({ image_id: image.id, parts_done: [1, 2] });
  }, 120_000);

  it("refuses a part plan whose parts exceed the request-body limit, and leaves no record", async () => {
    const file = join(work, "big.tif");
    const http = new Http({ api: stack.api, key: stack.key, retry: fastRetry });
    const states: { image_id?: string }[] = [];
    const size = readFileSync(file).length;
    const attempt = uploadImage(http, { path: file, name: "big.tif", size }, { resumableAbove: MiB, bodyLimit: 4 * MiB, onState: (s) => states.push(s) });
    await expect(attempt).rejects.toThrow(UploadFailedError);
    await expect(attempt).rejects.toThrow(/parts of 8388608 bytes, more than the 4194304 bytes/);
    const gone = await fetch(`${stack.api}/upload/${states[0]!.image_id}`, { headers: { Authorization: `Bearer ${stack.key}` } });
    expect(gone.status).toBe(404);
  }, 60_000);

  it("waits while another prediction of the organization runs, then segments, through a resumable upload", async () => {
    // Someone else's prediction, on a bigger image, holds the organization's one slot.
    const form = new FormData();
    form.append("file", new File([nucleiPng(1024, 1024) as Uint8Array<ArrayBuffer>], "other.png"));
    const { image: other } = (await (
      await fetch(`${stack.api}/upload`, { method: "POST", body: form, headers: { Authorization: `Bearer ${stack.key}` } })
    ).json()) as { image: { id: string } };
    const busy = await fetch(`${stack.api}/predict`, {
      method: "POST",
      headers: { Authorization: `Bearer ${stack.key}`, "Content-Type": "application/json" },
      body: JSON.stringify({ image_id: other.id, model_id: "cpsam" }),
    });
    expect(busy.status).toBe(202);

    const folder = folderOf("waiting", { "g.tif": nucleiTiff(160, 160) });
    const out = join(work, "waiting-out");
    const faults = faultyFetch(1);
    const http = new Http({ api: stack.api, key: stack.key, fetch: faults.fetch, retry: fastRetry });
    const sink = new PassThrough();
    let output = "";
    sink.on("data", (chunk) => (output += chunk));
    const code = await segmentCommand([folder, "--out", out, "--resumable-above", "0", "--poll", "0.2", "--formats", "csv,masks", "--diameter", "auto"], {
      out: sink,
      http,
    });
    expect(code, output).toBe(0);
    expect(output).toMatch(/waiting: A prediction is already (running|queued) for this organization/);
    expect(faults.failedOnce()).toBe(true);
    expect(existsSync(join(out, "g", "measurements.csv"))).toBe(true);
    expect([...readFileSync(join(out, "g", "masks.png")).subarray(0, 8)]).toEqual(PNG_SIGNATURE);
    expect(existsSync(join(out, "g", "rois.zip"))).toBe(false);
  }, 240_000);
});
