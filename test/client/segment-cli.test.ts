// The client CLI against the real local stack (wrangler dev + a CPU runner with the committed cpsam):
// a folder segmented end to end, a resumable upload surviving a failed part, a run interrupted and
// resumed without repeating work, the one-prediction-at-a-time rule waited out, and a bad file
// failing the exit status without stopping the others.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { decode as decodePng, encode as encodePng } from "fast-png";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_MEASUREMENT_COLUMNS } from "../../common/measurement-columns.ts";
import { type LocalStack, startStack } from "../../scripts/local-stack.ts";
import { segmentCommand } from "../../client/commands/segment.ts";
import { Http } from "../../client/http.ts";
import { OUTLINE_RGB } from "../../client/overlay.ts";
import { SUMMARY_COLUMNS } from "../../client/summary.ts";
import { decodeImage } from "../../common/decode/index.ts";
import { stretchOf, toBytes } from "../../common/stretch.ts";
import { STATE_FILE } from "../../client/resume-state.ts";
import { UploadFailedError, uploadImage } from "../../client/upload.ts";
import { syntheticNuclei } from "../fixtures/nuclei-grid.ts";
import { encodeTiff } from "../fixtures/tiff-writer.ts";

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

/** The final table's rows, each cell by its column's name (columns start where their header does). */
function summaryRows(output: string): Record<(typeof SUMMARY_COLUMNS)[number], string>[] {
  const lines = output.split("\n");
  const header = lines.findIndex((l) => SUMMARY_COLUMNS.every((c) => l.includes(c)));
  expect(header, output).toBeGreaterThanOrEqual(0);
  const starts = SUMMARY_COLUMNS.map((c) => lines[header]!.indexOf(c));
  const rows = [];
  for (const line of lines.slice(header + 2)) {
    if (/^\d+ of \d+ images? segmented/.test(line)) break;
    rows.push(Object.fromEntries(SUMMARY_COLUMNS.map((c, i) => [c, line.slice(starts[i], starts[i + 1]).trim()])));
  }
  return rows as Record<(typeof SUMMARY_COLUMNS)[number], string>[];
}

const seconds = (time: string) => Number(time.match(/^(\d+(?:\.\d+)?) s$/)![1]);

/**
 * The overlay beside an image's exports: the image's size, every pixel on a cell's border (by the
 * label mask, masks.png) in the outline colour, every pixel two or more pixels from any cell the
 * plain stretched image's gray.
 */
function expectOverlay(imagePath: string, dir: string, file: string): void {
  const picture = decodePng(readFileSync(join(dir, file)));
  const image = decodeImage(readFileSync(imagePath));
  const { width, height } = image;
  expect([picture.width, picture.height, picture.channels, picture.depth]).toEqual([width, height, 3, 8]);
  const gray = toBytes(image.data, stretchOf(image.data, width, height));
  const labels = decodePng(readFileSync(join(dir, "masks.png"))).data;
  const label = (x: number, y: number) => (x < 0 || y < 0 || x >= width || y >= height ? -1 : labels[y * width + x]!);
  const near = (x: number, y: number, r: number) => {
    for (let dy = -r; dy <= r; dy++) for (let dx = -r; dx <= r; dx++) if (label(x + dx, y + dy) > 0) return true;
    return false;
  };
  const outline: string[] = [];
  const plain: string[] = [];
  const farGrays = new Set<number>();
  let borderPixels = 0;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      const rgb = [...picture.data.subarray(3 * i, 3 * i + 3)];
      const l = label(x, y);
      if (l > 0 && [label(x + 1, y), label(x - 1, y), label(x, y + 1), label(x, y - 1)].some((n) => n !== l)) {
        borderPixels++;
        if (rgb.join() !== OUTLINE_RGB.join() || rgb.join() === [gray[i], gray[i], gray[i]].join()) outline.push(`(${x}, ${y}): ${rgb}`);
      } else if (!near(x, y, 2)) {
        farGrays.add(gray[i]!);
        if (rgb.join() !== [gray[i], gray[i], gray[i]].join()) plain.push(`(${x}, ${y}): ${rgb}, not ${gray[i]}`);
      }
    }
  }
  expect(outline.slice(0, 10)).toEqual([]);
  expect(plain.slice(0, 10)).toEqual([]);
  expect(borderPixels).toBeGreaterThan(100);
  // The background is not one flat gray, so "unchanged" is a real check.
  expect(farGrays.size).toBeGreaterThan(10);
}

const ZIP_SIGNATURE = [0x50, 0x4b];
const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

function expectExports(dir: string): number {
  const csv = readFileSync(join(dir, "measurements.csv"), "utf8").trim().split(/\r?\n/);
  expect(csv[0]!.split(",")).toEqual(DEFAULT_MEASUREMENT_COLUMNS.map((c) => c.name));
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
      // The first is the largest: its prediction takes several times the others' (see the times below).
      "a.tif": nucleiTiff(640, 640),
      "b.png": nucleiPng(160, 160),
      "c.tiff": nucleiTiff(128, 192),
      "notes.txt": "not an image, not picked up",
    });
    firstOut = join(work, "three-out");
    const before = await counts();
    const { code, output } = await runClient(["segment", firstFolder, "--out", firstOut, "--poll", "0.2"]);
    expect(code, output).toBe(0);
    const cells = ["a", "b", "c"].map((image) => expectExports(join(firstOut, image)));
    for (const n of cells) expect(n).toBeGreaterThan(5);
    expect(output).toMatch(/3 of 3 images segmented/);
    // Without --model each image gets the public model recommended for what it is: these are fluorescence.
    expect(output).toMatch(/each with the public model recommended for its modality/);
    for (const name of ["a.tif", "b.png", "c.tiff"])
      expect(output).toMatch(new RegExp(`${name.replace(".", "\\.")}: model cpsam, recommended for fluorescence: `));

    // The table: per image its id (as the service knows it), result, cells, own time, output folder.
    const rows = summaryRows(output);
    expect(rows.map((r) => [r.image, r.result, r.cells, r["output folder / reason"]])).toEqual(
      ["a.tif", "b.png", "c.tiff"].map((name, i) => [name, "done", String(cells[i]), join(firstOut, name.split(".")[0]!)]),
    );
    for (const row of rows) expect((await api<{ name: string }>(`/image/${row["image id"]}`)).name).toBe(row.image);
    // Each image's own time, not a running total: a running total (or a time counting the wait for
    // its turn) would hold all of the large one's prediction, so a small image after it would show
    // more than the large one's time. Its own time is less, by how much depends on the machine's
    // load (1.9 s against 3.6 s on a busy CI machine), so the bound is the large one's time.
    const [large, ...small] = rows.map((r) => seconds(r.time));
    for (const t of small) expect(t, output).toBeLessThan(large!);
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
    // A refused upload names no image; the three done earlier keep theirs.
    expect(summaryRows(output).map((r) => [r.image, r["image id"] !== "", r.result])).toEqual([
      ["a.tif", true, "done (earlier run)"],
      ["b.png", true, "done (earlier run)"],
      ["c.tiff", true, "done (earlier run)"],
      ["broken.tif", false, "FAILED"],
    ]);
    expect(output).toMatch(/3 of 4 images segmented, 1 failed/);
    expect(output.match(/already done/g)).toHaveLength(3);
    // Nothing was uploaded or predicted again, and the refused file left no record behind.
    expect(await counts()).toEqual(before);
  }, 120_000);

  it("--overlay draws each image's outlines over its stretched picture beside the exports; a rerun draws a missing one without predicting again", async () => {
    const [width, height] = [208, 176];
    const { data } = syntheticNuclei(width, height);
    // A gradient under the nuclei, so that far from the cells the picture is not one flat gray.
    for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data[y * width + x]! += (x * 3 + y * 2) % 400;
    const folder = folderOf("overlay", {
      "h.tif": encodeTiff([{ width, height, samplesPerPixel: 1, values: data, kind: "uint16" }]),
      "i.png": encodePng({ width, height, data, depth: 16, channels: 1 }),
    });
    const out = join(work, "overlay-out");
    const args = ["segment", folder, "--out", out, "--poll", "0.2", "--overlay"];
    const { code, output } = await runClient(args);
    expect(code, output).toBe(0);
    expectOverlay(join(folder, "h.tif"), join(out, "h"), "h-overlay.png");
    expectOverlay(join(folder, "i.png"), join(out, "i"), "i-overlay.png");

    rmSync(join(out, "i", "i-overlay.png"));
    const before = await counts();
    const again = await runClient(args);
    expect(again.code, again.output).toBe(0);
    expect(again.output.match(/already done/g)).toHaveLength(2);
    expectOverlay(join(folder, "i.png"), join(out, "i"), "i-overlay.png");
    expect(await counts()).toEqual(before);

    const noOutlines = await runClient([...args, "--formats", "csv,masks"]);
    expect(noOutlines.code).toBe(2);
    expect(noOutlines.output).toContain("--overlay draws the outlines from rois.geojson: add geojson to --formats");
  }, 240_000);

  it("--columns picks the CSV's columns and the GeoJSON's properties; other columns on a rerun fetch those two again, predicting nothing", async () => {
    const folder = folderOf("columns", { "g.tif": nucleiTiff(160, 160) });
    const out = join(work, "columns-out");
    const args = ["segment", folder, "--out", out, "--poll", "0.2", "--formats", "csv,geojson,masks"];
    const shape = ["circularity", "solidity", "eccentricity", "major_axis_px", "minor_axis_px", "orientation_deg", "feret_max_px", "equivalent_diameter_px"];
    const first = await runClient([...args, "--columns", "roi_id,shape"]);
    expect(first.code, first.output).toBe(0);
    const csv = () =>
      readFileSync(join(out, "g", "measurements.csv"), "utf8")
        .trim()
        .split(/\r?\n/);
    const properties = () =>
      (JSON.parse(readFileSync(join(out, "g", "rois.geojson"), "utf8")) as { features: { properties: Record<string, unknown> }[] }).features.map(
        (f) => f.properties,
      );
    expect(csv()[0]!.split(",")).toEqual(["roi_id", ...shape]);
    expect(csv().length).toBeGreaterThan(5);
    expect(Object.keys(properties()[0]!)).toEqual(["roi_id", ...shape, "objectType"]);
    for (const p of properties()) expect(p.solidity as number).toBeGreaterThan(0.5);

    const before = await counts();
    const masks = statSync(join(out, "g", "masks.png")).mtimeMs;
    const second = await runClient([...args, "--columns", "default"]);
    expect(second.code, second.output).toBe(0);
    expect(csv()[0]!.split(",")).toEqual(DEFAULT_MEASUREMENT_COLUMNS.map((c) => c.name));
    expect(Object.keys(properties()[0]!)).toEqual([...DEFAULT_MEASUREMENT_COLUMNS.map((c) => c.name), "objectType"]);
    expect(statSync(join(out, "g", "masks.png")).mtimeMs).toBe(masks);
    expect(await counts()).toEqual(before);

    const wrong = await runClient([...args, "--columns", "roi_id,volume"]);
    expect(wrong.code).toBe(2);
    expect(wrong.output).toContain(
      "--columns takes measurement columns or groups; not volume. Groups: default, shape, calibrated, cell, intensity, all; columns: image_name",
    );
  }, 240_000);

  it("--cell-objects saves rois.geojson as QuPath cell objects, each cell's outline around its nucleus; refused without --cell-expansion", async () => {
    const folder = folderOf("cell-objects", { "h.tif": nucleiTiff(160, 160) });
    const out = join(work, "cell-objects-out");
    const args = ["segment", folder, "--out", out, "--poll", "0.2", "--formats", "geojson", "--cell-objects"];
    const refused = await runClient(args);
    expect(refused.code).toBe(2);
    expect(refused.output).toContain("--cell-objects saves the cells grown around the nuclei: give --cell-expansion too");

    const run = await runClient([...args, "--cell-expansion", "3px"]);
    expect(run.code, run.output).toBe(0);
    type Ring = number[][];
    const { features } = JSON.parse(readFileSync(join(out, "h", "rois.geojson"), "utf8")) as {
      features: { geometry: { coordinates: Ring[] }; nucleusGeometry: { coordinates: Ring[] }; properties: { objectType: string } }[];
    };
    expect(features.length).toBeGreaterThan(5);
    const span = (ring: Ring, axis: 0 | 1) => Math.max(...ring.map((p) => p[axis]!)) - Math.min(...ring.map((p) => p[axis]!));
    for (const { geometry, nucleusGeometry, properties } of features) {
      expect(properties.objectType).toBe("cell");
      // The cell reaches beyond its nucleus (up to 3 px a side, less where a neighbour's cell stops it).
      expect(span(geometry.coordinates[0]!, 0)).toBeGreaterThan(span(nucleusGeometry.coordinates[0]!, 0));
    }
  }, 240_000);

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

  it("prints the service's refusal of a 40 MiB Zeiss CZI before sending a byte of it", async () => {
    const file = join(work, "plate.czi");
    const bytes = new Uint8Array(40 * MiB);
    bytes.set(new TextEncoder().encode("ZISRAWFILE"));
    writeFileSync(file, bytes);
    let requests = 0;
    const http = new Http({
      api: stack.api,
      key: stack.key,
      retry: fastRetry,
      fetch: (input, init) => {
        requests++;
        return fetch(input, init);
      },
    });
    const attempt = uploadImage(http, { path: file, name: "plate.czi", size: bytes.length }, { resumableAbove: 64 * MiB, bodyLimit: 100_000_000 });
    await expect(attempt).rejects.toThrow(UploadFailedError);
    await expect(attempt).rejects.toThrow(/this is Zeiss CZI: convert it to a pyramidal OME-TIFF with Bio-Formats/);
    expect(requests).toBe(0);
  });

  it("sends a file the organization has uploaded before no more: the same SHA-256 finds its image", async () => {
    const file = join(work, "big.tif");
    let posts = 0;
    const http = new Http({
      api: stack.api,
      key: stack.key,
      retry: fastRetry,
      fetch: (input, init) => {
        if (init?.method === "POST") posts++;
        return fetch(input, init);
      },
    });
    let sent = 0;
    let found: { id: string } | undefined;
    const size = readFileSync(file).length;
    const image = await uploadImage(
      http,
      { path: file, name: "big-again.tif", size },
      { resumableAbove: MiB, bodyLimit: 100_000_000, onBytes: (delta) => (sent += delta), onAlreadyUploaded: (known) => (found = known) },
    );
    expect(found).toEqual(image);
    expect(image).toMatchObject({ name: "big.tif", upload_status: "ready", size });
    expect(posts).toBe(0);
    expect(sent).toBe(size);
  });

  it("refuses a part plan whose parts exceed the request-body limit, and leaves no record", async () => {
    // Another file than the one uploaded above (one byte of its filler changed), or it would not be sent at all.
    const file = join(work, "big-2.tif");
    const bytes = readFileSync(join(work, "big.tif"));
    bytes[bytes.length - 1]! ^= 1;
    writeFileSync(file, bytes);
    const http = new Http({ api: stack.api, key: stack.key, retry: fastRetry });
    const states: { image_id?: string }[] = [];
    const size = bytes.length;
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

    // Of a size no other test uploads: the same file would be found by its SHA-256 and not sent.
    const folder = folderOf("waiting", { "g.tif": nucleiTiff(168, 160) });
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
