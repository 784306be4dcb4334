// The viewer at full resolution, in a real browser (Debian's chromium driven by playwright-core)
// against the local stack: a tiled TIFF larger than the preview pyramid's bound (4096², whose finest
// level is then factor 2) is predicted block-wise, its blocks fanned out as block tasks that each
// write their core at full resolution; fitted, the viewer shows the pyramid alone; zoomed in on a
// nucleus it asks for the full-resolution tiles in view, and no others, and draws the image's own
// pixels there, under the outlines.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decode as decodePng } from "fast-png";
import type { BrowserContext, Page } from "playwright-core";
import { collectPageErrors, launchChromium } from "./chromium.ts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type LocalStack, startStack } from "../../scripts/local-stack.ts";
import { type Nucleus, SyntheticMosaic } from "../fixtures/mosaic.ts";
import { stackClient } from "../fixtures/nuclei-grid.ts";
import { encodeTiff } from "../fixtures/tiff-writer.ts";

/** Next to the dashboard test's screenshots (test/e2e/dashboard.test.ts). */
const SHOTS = "/tmp/cellseg-dashboard";
/**
 * Just past the pyramid's bound (4096²) and the runner's single-pass size (16.8 MP): the preview's
 * finest level is factor 2 and the image is cut into blocks. 4352 = 4 cores of 1088 a side (see
 * BLOCK_MEMORY_MB), 16 blocks, each core 3 × 3 full-resolution tiles of 512 (the last 64 px wide).
 */
const SIDE = 4352;
/** Where to zoom: a corner of four full-resolution tiles of two cores (the core row boundary at 1088, a tile boundary at 512). */
const TARGET = { x: 512, y: 1088 };
/**
 * The mosaic's nuclei lie in its top left-hand grid cells (x < 960, y < 1760), the rest is glass:
 * the two blocks there run the network, the other 14 are found glass and skip it (they still write
 * their full-resolution tiles). Two of the survey's 16 windows of 512² (at x = 0, y = 0 and 1280)
 * are tissue, 1.3 % of the sampled pixels nuclei: past the 99th percentile its normalisation takes
 * (below 1 %, the bounds would be the glass's noise and no block glass), so the network and the
 * display stretch see the nuclei as a slide's would be seen.
 */
const TISSUE_COLUMNS = 24;
const TISSUE_ROWS = 44;
const DIAMETER = 18;

let stack: LocalStack;
let runner: ChildProcess;
let context: BrowserContext;
let page: Page;
let profile: string;
const pageErrors: string[] = [];
let tiff: Uint8Array;
/** The mosaic with its nuclei in the top left-hand grid cells only. */
const mosaic = new (class extends SyntheticMosaic {
  constructor() {
    super(SIDE, SIDE);
  }
  override nucleus(gx: number, gy: number): Nucleus | undefined {
    return gx < TISSUE_COLUMNS && gy < TISSUE_ROWS ? super.nucleus(gx, gy) : undefined;
  }
})();
const { api, postJson } = stackClient(() => stack);

beforeAll(async () => {
  profile = mkdtempSync(join(tmpdir(), "cellseg-chromium-"));
  // The file is made while the stack and the browser start.
  [stack, context, tiff] = await Promise.all([startStack(), launchChromium(profile, { viewport: { width: 1440, height: 900 } }), mosaicTiff()]);
  // One runner is enough: a TIFF is read at random, so its plan becomes block tasks however many
  // runners there are (gpu-runner/runner/predict-job.ts). Its block memory gives 1088-px cores at
  // a diameter of 18 px (a block of 1160² at cpsam's 24 px: 64 bytes a pixel, times (24/18)²).
  runner = stack.startRunner({ BLOCK_MEMORY_MB: "160" });
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(30_000);
  collectPageErrors(page, pageErrors);
}, 180_000);

afterEach(() => {
  expect(pageErrors.splice(0)).toEqual([]);
});

afterAll(async () => {
  await context?.close();
  // The runner first, and at once (it holds no job once the prediction is done): stopped with the
  // worker, it would try to lease for half a minute before it exits.
  if (runner && runner.exitCode === null && runner.signalCode === null) {
    const exited = new Promise((resolve) => runner.once("exit", resolve));
    runner.kill("SIGKILL");
    await exited;
  }
  await stack?.stop();
  if (profile) rmSync(profile, { recursive: true, force: true });
}, 60_000);

const shot = (name: string) => page.screenshot({ path: `${SHOTS}-${name}.png` });

/** The mosaic as a tiled 16-bit TIFF, rendered a band at a time (letting the stack start meanwhile). */
async function mosaicTiff(): Promise<Uint8Array> {
  const values = new Uint16Array(SIDE * SIDE);
  const band = 256;
  for (let y = 0; y < SIDE; y += band) {
    values.set(mosaic.render(0, y, SIDE, Math.min(band, SIDE - y)).data, y * SIDE);
    await new Promise((resolve) => setImmediate(resolve));
  }
  return encodeTiff([{ width: SIDE, height: SIDE, samplesPerPixel: 1, values, kind: "uint16", tile: { width: 256, height: 256 } }]);
}

// Code that runs in the page, kept as text: this file is type-checked against Node's types, not the DOM's.
/** The viewer canvas's colour at the centre of image pixel (ix, iy), after the current zoom and pan. */
const PIXEL_AT = `(ix, iy) => {
  const [scale, x, y] = document.getElementById("viewer").dataset.view.split(",").map(Number);
  const canvas = document.getElementById("viewer-canvas");
  const dpr = window.devicePixelRatio || 1;
  const d = canvas.getContext("2d").getImageData(Math.floor(((ix + 0.5) * scale + x) * dpr), Math.floor(((iy + 0.5) * scale + y) * dpr), 1, 1).data;
  return [d[0], d[1], d[2]];
}`;
/** Counts the viewer canvas's pixels whose colour passes a test. */
const COUNT_PIXELS = `(test) => {
  const canvas = document.getElementById("viewer-canvas");
  const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let n = 0;
  for (let i = 0; i < data.length; i += 4) if (test(data[i], data[i + 1], data[i + 2])) n++;
  return n;
}`;

type Core = { x: number; y: number; width: number; height: number };
type Preview = {
  status: string;
  index: { width: number; height: number; tile: number; levels: { factor: number; columns: number; rows: number }[] };
  full: { tile: number; blocks: Core[] };
};

let imageId: string;
let segmentationId: string;
let preview: Preview;

describe("the viewer at full resolution", () => {
  it("predicts a tiled TIFF past the pyramid's bound block by block, fanned out, and lists its full-resolution level", async () => {
    const form = new FormData();
    form.append("file", new File([tiff as Uint8Array<ArrayBuffer>], "full-resolution.tif"));
    const { image } = await api<{ image: { id: string; upload_status: string } }>("/upload", { method: "POST", body: form });
    expect(image.upload_status).toBe("ready");
    imageId = image.id;
    const { prediction_id } = await postJson<{ prediction_id: string }>("/predict", { image_id: imageId, model_id: "cpsam", params: { diameter: DIAMETER } });
    const deadline = Date.now() + 240_000;
    let done: Record<string, unknown>;
    for (;;) {
      done = await api(`/predict/${prediction_id}`);
      if (done.status === "COMPLETED" || done.status === "FAILED" || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    // 16 blocks, all but the two that hold nuclei glass.
    expect(done).toMatchObject({ status: "COMPLETED", blocks: { total: 16, done: 16, glass: 14 } });
    segmentationId = done.segmentation_id as string;

    // Signed in, the browser reads the dashboard's API as the viewer will.
    await page.goto(await stack.loginLink());
    await Promise.all([page.waitForURL((url) => url.pathname === "/dashboard"), page.click("button:has-text('Sign in')")]);
    const response = await page.request.get(new URL(`/dashboard/api/images/${imageId}/preview`, stack.api).toString());
    preview = (await response.json()) as Preview;
    // The pyramid's finest level is half resolution; the full level (written by block tasks only: a
    // prediction segmented block by block in one job has none) is the 16 cores, in grid order.
    expect(preview).toMatchObject({ status: "ready", index: { width: SIDE, height: SIDE, tile: 512 }, full: { tile: 512 } });
    expect(preview.index.levels[0]!.factor).toBe(2);
    expect(preview.full.blocks).toEqual(Array.from({ length: 16 }, (_, i) => ({ x: (i % 4) * 1088, y: Math.floor(i / 4) * 1088, width: 1088, height: 1088 })));
  }, 300_000);

  it("shows the pyramid fitted, and the image's own pixels under the outlines zoomed in on a nucleus", async () => {
    const fullRequests: string[] = [];
    page.on("request", (request) => {
      const match = new RegExp(`/images/${imageId}/full/(\\d+/\\d+/\\d+)$`).exec(request.url());
      if (match) fullRequests.push(match[1]!);
    });
    await page.goto(new URL(`/dashboard/segmentations/${segmentationId}`, stack.api).toString());
    await page.waitForSelector("#viewer[data-loaded=true][data-preview=ready]");
    const viewer = page.locator("#viewer");
    const canvas = page.locator("#viewer-canvas");
    expect(await viewer.getAttribute("data-full-resolution")).toBe("16");
    /** Where image pixels are on screen (screen = image × scale + (x, y), CSS pixels from the canvas's corner), the canvas's box, and the image's rectangle in view. */
    const currentView = async () => {
      const [scale, x, y] = (await viewer.getAttribute("data-view"))!.split(",").map(Number) as [number, number, number];
      const box = (await canvas.boundingBox())!;
      const seen = {
        x0: Math.max(0, -x / scale),
        y0: Math.max(0, -y / scale),
        x1: Math.min(SIDE, (box.width - x) / scale),
        y1: Math.min(SIDE, (box.height - y) / scale),
      };
      return { scale, x, y, box, seen };
    };
    /** The full-resolution tiles that meet an image rectangle, with their own rectangles. */
    const tilesMeeting = (region: { x0: number; y0: number; x1: number; y1: number }) =>
      preview.full.blocks.flatMap((core, block) =>
        Array.from({ length: 9 }, (_, i) => ({ block, column: i % 3, row: Math.floor(i / 3) }))
          .map((t) => ({ ...t, key: `${t.block}/${t.column}/${t.row}`, left: core.x + t.column * 512, top: core.y + t.row * 512 }))
          .map((t) => ({ ...t, right: Math.min(core.x + core.width, t.left + 512), bottom: Math.min(core.y + core.height, t.top + 512) }))
          .filter((t) => t.left < region.x1 && t.right > region.x0 && t.top < region.y1 && t.bottom > region.y0),
      );
    const keys = (tiles: { key: string }[]) => [...new Set(tiles.map((t) => t.key))].sort();

    // Fitted, a screen pixel covers several image pixels: the pyramid's level for that, none of the full one.
    const fitted = await currentView();
    const pyramidLevel = Math.max(...preview.index.levels.map((l) => l.factor).filter((f) => f <= 1 / fitted.scale));
    expect(pyramidLevel).toBeGreaterThan(2);
    await expect.poll(() => viewer.getAttribute("data-level-factor")).toBe(String(pyramidLevel));
    await page.waitForTimeout(500);
    expect(fullRequests).toEqual([]);
    expect(await viewer.getAttribute("data-full-tiles-loaded")).toBeNull();
    await shot("full-resolution-fitted");

    // One wheel turn in on the corner of four tiles, 36 times closer: an image pixel now covers
    // several screen pixels, and only the tiles in view are asked for.
    await page.mouse.move(fitted.box.x + TARGET.x * fitted.scale + fitted.x, fitted.box.y + TARGET.y * fitted.scale + fitted.y);
    await page.mouse.wheel(0, -2400);
    await expect.poll(() => viewer.getAttribute("data-level-factor")).toBe("1");
    const { scale, x, y, box, seen } = await currentView();
    expect(scale).toBeGreaterThan(2); // past the pyramid's smoothing: each image pixel a square of screen pixels
    const inView = tilesMeeting(seen);
    expect(inView.map((t) => t.block).sort()).toEqual([0, 0, 4, 4]);
    await expect.poll(() => viewer.getAttribute("data-full-tiles-loaded"), { timeout: 30_000 }).toBe(String(inView.length));
    await page.waitForTimeout(300);
    expect(fullRequests.sort()).toEqual(keys(inView));

    // What a person sees, outlines hidden: each nucleus in view bright at its centre, the corners of
    // the mosaic's grid cells between them dark.
    await page.uncheck("#show-outlines");
    const pixel = (ix: number, iy: number) => page.evaluate<number[]>(`(${PIXEL_AT})(${ix}, ${iy})`);
    const margin = 4;
    const within = (px: number, py: number) => px > seen.x0 + margin && px < seen.x1 - margin && py > seen.y0 + margin && py < seen.y1 - margin;
    const nuclei: Nucleus[] = [];
    for (let gy = Math.floor(seen.y0 / 40); gy <= Math.floor(seen.y1 / 40); gy++)
      for (let gx = Math.floor(seen.x0 / 40); gx <= Math.floor(seen.x1 / 40); gx++) {
        const n = mosaic.nucleus(gx, gy);
        if (n && within(n.cx, n.cy)) nuclei.push(n);
      }
    expect(nuclei.length).toBeGreaterThan(4);
    for (const n of nuclei) expect(Math.min(...(await pixel(Math.floor(n.cx), Math.floor(n.cy)))), `nucleus ${n.id}`).toBeGreaterThan(120);
    let corners = 0;
    for (let gy = Math.ceil(seen.y0 / 40); gy * 40 < seen.y1; gy++)
      for (let gx = Math.ceil(seen.x0 / 40); gx * 40 < seen.x1; gx++) {
        if (!within(gx * 40, gy * 40)) continue;
        expect(Math.max(...(await pixel(gx * 40, gy * 40))), `corner ${gx * 40},${gy * 40}`).toBeLessThan(50);
        corners++;
      }
    expect(corners).toBeGreaterThan(4);

    // Those are the full-resolution tiles' pixels, each where it belongs: on two lines across the
    // four tiles, every image pixel on screen is its tile's, which the pyramid's half-resolution
    // pixels (2 × 2 averaged) mostly are not.
    const png = async (path: string) => {
      const tile = decodePng(new Uint8Array(await (await page.request.get(new URL(`/dashboard/api/images/${imageId}/${path}`, stack.api).toString())).body()));
      expect(tile.channels).toBe(1);
      return tile;
    };
    const tiles = await Promise.all(inView.map((t) => png(`full/${t.key}`)));
    inView.forEach((t, i) => expect([tiles[i]!.width, tiles[i]!.height], t.key).toEqual([t.right - t.left, t.bottom - t.top]));
    const fullAt = (ix: number, iy: number) => {
      const i = inView.findIndex((t) => ix >= t.left && ix < t.right && iy >= t.top && iy < t.bottom);
      return tiles[i]!.data[(iy - inView[i]!.top) * tiles[i]!.width + (ix - inView[i]!.left)]!;
    };
    const pyramid = await png(`preview/0/${Math.floor(TARGET.x / 1024)}/${Math.floor(TARGET.y / 1024)}`);
    const halfAt = (ix: number, iy: number) => pyramid.data[(Math.floor(iy / 2) % 512) * pyramid.width + (Math.floor(ix / 2) % 512)]!;
    let unlikeHalf = 0;
    let compared = 0;
    for (const iy of [TARGET.y - 9, TARGET.y + 9])
      for (let ix = Math.ceil(seen.x0) + margin; ix < seen.x1 - margin; ix++) {
        const value = fullAt(ix, iy);
        expect(await pixel(ix, iy), `image pixel ${ix},${iy}`).toEqual([value, value, value]);
        if (Math.abs(halfAt(ix, iy) - value) > 1) unlikeHalf++;
        compared++;
      }
    expect(compared).toBeGreaterThan(100);
    expect(unlikeHalf).toBeGreaterThan(compared / 4);
    await shot("full-resolution-zoomed-image");

    // With the outlines: yellow outline pixels drawn over those nuclei, and the cell under the
    // pointer at a nucleus's centre is that nucleus (its centroid within two pixels of the truth's).
    await page.check("#show-outlines");
    expect(await page.evaluate<number>(`(${COUNT_PIXELS})((r, g, b) => r > 200 && g > 170 && b < 90)`)).toBeGreaterThan(nuclei.length * 100);
    await shot("full-resolution-zoomed");
    const nucleus = nuclei.reduce((best, n) => (n.brightness > best.brightness ? n : best));
    await page.mouse.move(box.x + nucleus.cx * scale + x, box.y + nucleus.cy * scale + y);
    await expect.poll(() => viewer.getAttribute("data-hovered-cell")).not.toBe("");
    const facts = await page.locator("#cell-facts").innerText();
    expect(Math.abs(Number(/Centroid x\s+([\d.]+)/.exec(facts)![1]) - nucleus.cx)).toBeLessThanOrEqual(2);
    expect(Math.abs(Number(/Centroid y\s+([\d.]+)/.exec(facts)![1]) - nucleus.cy)).toBeLessThanOrEqual(2);

    // Out again to just past half resolution, the image's left edge 300 px inside the canvas (one
    // wheel turn about the point that stays put): the tiles asked for are still those the view
    // meets, from that edge to the canvas's, none past it (as there would be if the view were
    // taken to start at the canvas's edge).
    const out = 0.6 / scale;
    const [sx, sy] = [(300 - x * out) / (1 - out), (20 - y * out) / (1 - out)];
    expect(sx > 0 && sx < box.width && sy > 0 && sy < box.height).toBe(true);
    await page.mouse.move(box.x + sx, box.y + sy);
    await page.mouse.wheel(0, Math.log(1 / out) / 0.0015);
    await expect.poll(async () => Math.round((await currentView()).x)).toBe(300);
    const corner = await currentView();
    expect(1 / corner.scale).toBeLessThan(2);
    expect(await viewer.getAttribute("data-level-factor")).toBe("1");
    const cornerTiles = tilesMeeting(corner.seen);
    const both = keys([...inView, ...cornerTiles]);
    expect(keys(tilesMeeting({ ...corner.seen, x1: corner.seen.x0 + corner.box.width / corner.scale })).length).toBeGreaterThan(cornerTiles.length);
    await expect.poll(() => viewer.getAttribute("data-full-tiles-loaded"), { timeout: 30_000 }).toBe(String(both.length));
    await page.waitForTimeout(300);
    expect(fullRequests.sort()).toEqual(both);
    await shot("full-resolution-corner");
  }, 120_000);
});
