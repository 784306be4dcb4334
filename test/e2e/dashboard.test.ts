// The dashboard in a real browser (Debian's chromium driven by playwright-core) against the local
// stack: sign in with a one-time link, manage API keys, upload by drag and drop and through the
// resumable protocol (with a failed part retried), segment an image, look at its cells, download.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encode as encodePng } from "fast-png";
import type { BrowserContext, Page } from "playwright-core";
import { collectPageErrors, launchChromium } from "./chromium.ts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type LocalStack, startStack } from "../../scripts/local-stack.ts";
import { createHash, randomBytes } from "node:crypto";
import { nucleusCentres, syntheticNuclei, syntheticNucleiLabels } from "../fixtures/nuclei-grid.ts";
import { inSight, layoutProblems, WINDOW_SIZES } from "./layout-checks.ts";

/** Larger than one bitmap: its preview is three levels of 512-px tiles (5 × 3 at full resolution). */
const LARGE = { width: 2600, height: 1100 };
const SHOTS = "/tmp/cellseg-dashboard";

let stack: LocalStack;
let context: BrowserContext;
let page: Page;
let profile: string;
let files: string;
const pageErrors: string[] = [];

beforeAll(async () => {
  stack = await startStack();
  stack.startRunner();
  profile = mkdtempSync(join(tmpdir(), "cellseg-chromium-"));
  files = mkdtempSync(join(tmpdir(), "cellseg-files-"));
  context = await launchChromium(profile, { viewport: { width: 1440, height: 900 }, acceptDownloads: true });
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(30_000);
  // A script error on any page fails the test that caused it (see afterEach).
  collectPageErrors(page, pageErrors);
}, 180_000);

afterEach(() => {
  expect(pageErrors.splice(0)).toEqual([]);
});

afterAll(async () => {
  await context?.close();
  await stack?.stop();
  for (const dir of [profile, files]) if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

/** Follows a link and waits until the new page's script has attached its handlers. */
async function open(selector: string): Promise<void> {
  await Promise.all([page.waitForEvent("load"), page.click(selector)]);
  await page.waitForSelector("html[data-ready=true]", { state: "attached" });
}

const shot = (name: string) => page.screenshot({ path: `${SHOTS}-${name}.png` });
const apiStatus = async (key: string) => (await fetch(`${stack.api}/models`, { headers: { Authorization: `Bearer ${key}` } })).status;

/** Where the viewer has image pixels on screen, from its data-view attribute: "scale,x,y". */
async function viewerView(): Promise<{ scale: number; x: number; y: number }> {
  const view = (await page.locator("#viewer").getAttribute("data-view"))!.split(",").map(Number);
  expect(view).toHaveLength(3);
  return { scale: view[0]!, x: view[1]!, y: view[2]! };
}

function nucleiPng(width: number, height: number): Buffer {
  const { data } = syntheticNuclei(width, height);
  return Buffer.from(encodePng({ width, height, data, depth: 16, channels: 1 }));
}

/** Noise does not compress, so this PNG is over 8 MiB and goes through the resumable protocol. */
function largeNoisePng(side: number): Buffer {
  const data = new Uint16Array(side * side);
  let seed = 12345;
  for (let i = 0; i < data.length; i++) data[i] = (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 16;
  return Buffer.from(encodePng({ width: side, height: side, data, depth: 16, channels: 1 }));
}

// Code that runs in the page, kept as text: this file is type-checked against Node's types, not the DOM's.
/** Drops a file (base64 bytes) on the upload zone the way a drag from the desktop does. */
const DROP_FILE = `(b64, name) => {
  const bytes = Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
  const transfer = new DataTransfer();
  transfer.items.add(new File([bytes], name, { type: "image/png" }));
  document.getElementById("dropzone").dispatchEvent(new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true }));
}`;
/** The viewer canvas's colour at an image pixel, after the current zoom and pan. */
const PIXEL_AT = `(ix, iy) => {
  const [scale, x, y] = document.getElementById("viewer").dataset.view.split(",").map(Number);
  const canvas = document.getElementById("viewer-canvas");
  const dpr = window.devicePixelRatio || 1;
  const d = canvas.getContext("2d").getImageData(Math.round((ix * scale + x) * dpr), Math.round((iy * scale + y) * dpr), 1, 1).data;
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

/** Counts the pixels of a canvas (by id) whose colour passes a test. */
const COUNT_CANVAS_PIXELS = `(id, test) => {
  const canvas = document.getElementById(id);
  const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let n = 0;
  for (let i = 0; i < data.length; i += 4) if (data[i + 3] > 0 && test(data[i], data[i + 1], data[i + 2])) n++;
  return n;
}`;

describe("the dashboard in a browser", () => {
  it("signs in with a one-time link and shows the organization's usage", async () => {
    // Opening the link shows a button; pressing it spends the link and opens the session.
    await page.goto(await stack.loginLink());
    expect(await page.locator("main").innerText()).toContain(`signs you in to the organization ${stack.slug}`);
    await Promise.all([page.waitForURL((url) => url.pathname === "/dashboard"), page.click("button:has-text('Sign in')")]);
    await page.waitForSelector("html[data-ready=true]", { state: "attached" });
    expect(new URL(page.url()).pathname).toBe("/dashboard");
    await expect.poll(() => page.locator(".topbar .org").textContent()).toBe(stack.slug);
    // The page's Content-Security-Policy holds in the browser: an inline script put into it does not run.
    const injectedRan = await page.evaluate<boolean>(`(() => {
      const script = document.createElement("script");
      script.textContent = "document.documentElement.dataset.injected = 'ran'";
      document.head.append(script);
      return document.documentElement.dataset.injected === "ran";
    })()`);
    expect(injectedRan).toBe(false);
    await expect.poll(() => pageErrors.join("\n")).toMatch(/Content Security Policy/);
    pageErrors.splice(0);
    // The static assets, served by Workers Static Assets before the worker, get their headers from _headers.
    const asset = await fetch(new URL("/dashboard/assets/dashboard.js", stack.api));
    expect(asset.headers.get("x-content-type-options")).toBe("nosniff");
    expect(asset.headers.get("referrer-policy")).toBe("same-origin");
    expect(await page.locator("#usage-storage").innerText()).toContain("0 / 100");
    expect(await page.locator("#usage-analyses").innerText()).toMatch(/Analyses this month\s+0 \/ 200/);
    await shot("images-empty");
  }, 60_000);

  it("creates an API key shown once, and revokes it so the API refuses it at once", async () => {
    await open("text=API keys");
    await page.fill("#create-key input[name=name]", "browser test");
    await page.click("button:has-text('Create API key')");
    await page.waitForSelector("#new-key:not([hidden])");
    const key = (await page.locator("#new-key-value").textContent())!;
    expect(key).toMatch(/^csk_[0-9a-f]{64}$/);
    await page.click("#copy-key");
    await expect.poll(() => page.locator("#copy-key").textContent()).toBe("Copied");
    const row = page.locator("#keys tr", { hasText: "browser test" });
    expect(await row.innerText()).toContain(key.slice(0, 12));
    expect(await apiStatus(key)).toBe(200);
    await shot("keys");

    page.once("dialog", (dialog) => dialog.accept());
    await row.locator("button:has-text('Revoke')").click();
    await expect.poll(() => row.locator(".badge").textContent()).toBe("revoked");
    expect(await apiStatus(key)).toBe(401);
    await page.reload();
    await page.waitForSelector("html[data-ready=true]", { state: "attached" });
    expect(await page.locator("#new-key").isHidden()).toBe(true); // shown once: gone after a reload
  }, 60_000);

  it("uploads by drag and drop, and a large file in resumable parts with a failed part retried", async () => {
    await open("nav >> text=Images");
    // The first PUT of a part fails as a flaky network would; the page must retry it.
    let failedOnce = false;
    await page.route("**/api/v1/storage/**", async (route) => {
      if (!failedOnce && route.request().method() === "PUT") {
        failedOnce = true;
        return route.fulfill({ status: 503, body: "unavailable" });
      }
      return route.continue();
    });
    const nuclei = nucleiPng(512, 384).toString("base64");
    await page.evaluate(`(${DROP_FILE})(${JSON.stringify(nuclei)}, "nuclei.png")`);
    await expect.poll(() => page.locator("#uploads").innerText(), { timeout: 30_000 }).toMatch(/nuclei\.png\s+ready · 512 × 384/);
    await expect.poll(() => page.locator("#images tbody tr").count(), { timeout: 10_000 }).toBe(1); // the list reloaded
    await page.waitForSelector("html[data-ready=true]", { state: "attached" });

    const large = join(files, "large-noise.png");
    writeFileSync(large, largeNoisePng(2400));
    expect(readFileSync(large).length).toBeGreaterThan(8 * 1024 * 1024);
    await page.setInputFiles("#file-input", large);
    // The line ends "ready · W × H" once the worker has checked the image (a failure shows its reason).
    await expect.poll(() => page.locator("#uploads").innerText(), { timeout: 60_000 }).toMatch(/large-noise\.png\s+ready · 2400 × 2400/);
    expect(failedOnce).toBe(true);
    await shot("uploads");
    await page.unroute("**/api/v1/storage/**");
    await expect.poll(() => page.locator("#images tbody tr").count(), { timeout: 10_000 }).toBe(2);
    expect(await page.locator("#images tr", { hasText: "large-noise.png" }).innerText()).toContain("ready");
    expect(await page.locator("#usage-storage").innerText()).toContain("2 / 100");
  }, 120_000);

  it("shows, as each mask field's placeholder, what the model uses when the field is left blank", async () => {
    await open("#images a:has-text('nuclei.png')");
    const placeholders = () =>
      Promise.all(["cellprob_threshold", "flow_threshold", "min_size"].map((name) => page.locator(`input[name=${name}]`).getAttribute("placeholder")));
    // cpsam's manifest (gpu-runner/models/cpsam/cpsam.json): fluorescence 0.5, 0, 30; histology
    // flow 0 and size 30; everything else Cellpose's 0, 0.4, 15. Once the image's preview has read
    // what it is (fluorescence), the form offers the model recommended for it, and "auto" shows
    // that modality's defaults.
    const offered = () => page.locator("select[name=model_id] option:checked").innerText();
    await expect
      .poll(
        async () => {
          await page.reload();
          return offered();
        },
        { timeout: 90_000, interval: 1000 },
      )
      .toBe("cpsam v3.1 (recommended for fluorescence)");
    expect(await placeholders()).toEqual(["0.5", "0", "30"]);
    await page.selectOption("select[name=modality]", "fluorescence");
    expect(await placeholders()).toEqual(["0.5", "0", "30"]);
    expect(await page.locator("#predict-defaults").innerText()).toContain("defaults for fluorescence");
    await page.selectOption("select[name=modality]", "brightfield");
    expect(await placeholders()).toEqual(["0", "0.4", "15"]);
    await page.selectOption("select[name=modality]", "");
  });

  it("runs a prediction, shows its progress, and opens the cells over the image", async () => {
    await page.fill("input[name=diameter]", "22");
    await page.click("button:has-text('Run prediction')");
    const row = page.locator("#predictions tbody tr").first();
    await expect.poll(() => row.getAttribute("data-status"), { timeout: 120_000 }).toBe("COMPLETED");
    const cells = Number(await row.locator(".cells").textContent());
    expect(cells).toBeGreaterThan(50);
    await shot("prediction");

    await open("#predictions a:has-text('View cells')");
    await page.waitForSelector("#viewer[data-loaded=true]");
    expect(await page.locator("#cell-count").textContent()).toBe(String(cells));
    expect(await page.locator("#viewer-canvas").getAttribute("data-outlines-drawn")).toBe(String(cells));
    expect(await page.locator("#viewer-status").textContent()).toBe(`${cells} outlines`);

    // What a person sees: yellow outline pixels over the image, gone when the toggle is off.
    const outlinePixels = () => page.evaluate<number>(`(${COUNT_PIXELS})((r, g, b) => r > 200 && g > 170 && b < 90)`);
    const imagePixels = () => page.evaluate<number>(`(${COUNT_PIXELS})((r, g, b) => r > 200 && g > 200 && b > 200)`);
    expect(await outlinePixels()).toBeGreaterThan(cells * 20);
    expect(await imagePixels()).toBeGreaterThan(1000); // the contrast-stretched preview: white nuclei
    await shot("viewer");
    await page.uncheck("#show-outlines");
    expect(await outlinePixels()).toBe(0);
    await page.check("#show-outlines");

    // Point at the first nucleus of the synthetic image (centre 20, 20 in image pixels).
    const box = (await page.locator("#viewer-canvas").boundingBox())!;
    const scale = Math.min(box.width / 512, box.height / 384);
    const left = box.x + (box.width - 512 * scale) / 2;
    const top = box.y + (box.height - 384 * scale) / 2;
    await page.mouse.move(left + 20.5 * scale, top + 20.5 * scale);
    await expect.poll(() => page.locator("#viewer").getAttribute("data-hovered-cell")).not.toBe("");
    const facts = await page.locator("#cell-facts").innerText();
    expect(facts).toMatch(/Area\s+\d+ px²/);
    expect(facts).toMatch(/Centroid x\s+\d/);
    // Beyond the default columns: shape and the cell's intensities.
    expect(facts).toMatch(/solidity\s+[01]\.\d{3}/);
    expect(facts).toMatch(/intensity c0 mean\s+\d/);
    await shot("viewer-hover");

    await page.click("#zoom-in");
    expect(await page.locator("#zoom-level").textContent()).toBe(`${Math.round(scale * 150)}%`);
    await page.setViewportSize({ width: 2560, height: 1440 });
    await page.click("#zoom-fit");
    await shot("viewer-large-screen");
    await page.setViewportSize({ width: 1440, height: 900 });

    const [download] = await Promise.all([page.waitForEvent("download"), page.click("a[data-export='measurements.csv']")]);
    expect(download.suggestedFilename()).toBe("nuclei-measurements.csv");
    const csv = readFileSync(await download.path(), "utf8");
    expect(csv.trim().split("\n")).toHaveLength(cells + 1);
    expect(csv.split("\n")[0]).toContain("area_px");
    const [zip] = await Promise.all([page.waitForEvent("download"), page.click("a[data-export='rois.zip']")]);
    expect(
      readFileSync(await zip.path())
        .subarray(0, 2)
        .toString(),
    ).toBe("PK");
  }, 180_000);

  it("corrects cells in the viewer: deletes three, draws one, undoes and redoes, keeps unsaved edits, saves them as a new segmentation", async () => {
    const original = new URL(page.url()).pathname.split("/").at(-1)!;
    const count = async () => Number((await page.locator("#cell-count").textContent())!.replaceAll(",", ""));
    const before = await count();
    /** Where image pixel (ix, iy) is on the screen now. */
    const screen = async (ix: number, iy: number): Promise<[number, number]> => {
      const { scale, x, y } = await viewerView();
      const box = (await page.locator("#viewer-canvas").boundingBox())!;
      return [box.x + ix * scale + x, box.y + iy * scale + y];
    };
    const selected = () => page.locator("#viewer").getAttribute("data-selected-cell");
    await page.click("#zoom-fit");
    await page.click("#edit-toggle");
    expect(await page.locator("#viewer").getAttribute("data-editing")).toBe("true");

    // Select a nucleus by clicking it (its measurements show), delete it with the Delete key; three times.
    const doomed = nucleusCentres(512, 384).slice(0, 3);
    for (const [cx, cy] of doomed) {
      await page.mouse.click(...(await screen(cx, cy)));
      await expect.poll(selected).not.toBe("");
      expect(await page.locator("#cell-facts").innerText()).toMatch(/Area\s+\d+ px²/);
      if (cx === doomed[0]![0]) {
        // A close-up of the selected cell, drawn in two tones (a white line inside a dark one).
        const [sx, sy] = await screen(cx, cy);
        await page.screenshot({ path: `${SHOTS}-edit-selected.png`, clip: { x: sx - 50, y: sy - 50, width: 100, height: 100 } });
      }
      await page.keyboard.press("Delete");
      expect(await selected()).toBe("");
    }
    expect(await count()).toBe(before - 3);
    expect(await page.locator("#edit-summary").textContent()).toBe("Unsaved: 3 deleted.");
    await shot("edit-deleted");

    // Undo brings the last one back (it can be selected again); redo deletes it again.
    await page.keyboard.press("Control+z");
    expect(await count()).toBe(before - 2);
    await page.mouse.click(...(await screen(doomed[2]![0], doomed[2]![1])));
    await expect.poll(selected).not.toBe("");
    await page.keyboard.press("Control+Shift+Z");
    expect(await count()).toBe(before - 3);
    expect(await selected()).toBe("");

    // Draw a square cell in the space between nuclei: four corners, then Enter.
    await page.click("#draw-cell");
    for (const [x, y] of [
      [34, 34],
      [46, 34],
      [46, 46],
      [34, 46],
    ])
      await page.mouse.click(...(await screen(x!, y!)));
    await page.keyboard.press("Enter");
    expect(await count()).toBe(before - 2);
    expect(await page.locator("#edit-summary").textContent()).toBe("Unsaved: 3 deleted, 1 drawn.");
    await shot("edit-drawn");

    // Leaving with unsaved corrections asks first; staying keeps them, and a reload brings them back.
    const asked = new Promise<string>((resolve) =>
      page.once("dialog", async (dialog) => {
        resolve(dialog.type());
        await dialog.dismiss();
      }),
    );
    await page.click("nav >> text=Models", { noWaitAfter: true });
    expect(await asked).toBe("beforeunload");
    expect(new URL(page.url()).pathname).toBe(`/dashboard/segmentations/${original}`);
    page.once("dialog", (dialog) => dialog.accept());
    await page.reload();
    await page.waitForSelector("#viewer[data-loaded=true]");
    expect(await page.locator("#restored-note").isVisible()).toBe(true);
    expect(await count()).toBe(before - 2);
    // The note names the controls shown: "Edit cells" until editing, then the buttons below it.
    expect(await page.locator("#save-corrections").isVisible()).toBe(false);
    expect(await page.locator("#restored-note").innerText()).toBe(
      "Unsaved corrections from your last visit are back: choose Edit cells to save or discard them.",
    );
    await page.click("#edit-toggle");
    expect(await page.locator("#restored-note").innerText()).toBe("Unsaved corrections from your last visit are back: save or discard them below.");
    expect(await inSight(page, "#save-corrections")).toMatchObject({ inSight: true });
    await shot("edit-restored");

    // Save: a new segmentation of the image, shown at once; through the API it has the drawn cell where it was drawn.
    await Promise.all([
      page.waitForURL((url) => url.pathname.startsWith("/dashboard/segmentations/") && !url.pathname.endsWith(original)),
      page.click("#save-corrections"),
    ]);
    await page.waitForSelector("#viewer[data-loaded=true]");
    expect(await count()).toBe(before - 2);
    expect(await page.locator("#restored-note").isVisible()).toBe(false);
    // The saved cells' intensities are measured by a runner afterwards; the page shows them when done, without a reload.
    await expect.poll(() => page.locator("#intensities-state").textContent(), { timeout: 90_000, interval: 1000 }).toBe("measured from the image");
    expect(await page.locator("#viewer").getAttribute("data-measurements")).toBe("measured");
    await shot("edit-saved");
    const saved = new URL(page.url()).pathname.split("/").at(-1)!;
    const response = await fetch(`${stack.api}/export/${saved}/rois.geojson`, { headers: { Authorization: `Bearer ${stack.key}` } });
    const { features } = (await response.json()) as {
      features: { properties: { bbox_x: number; bbox_y: number; bbox_w: number; bbox_h: number; segmentation_source: string } }[];
    };
    expect(features).toHaveLength(before - 2);
    expect(features[0]!.properties.segmentation_source).toBe("import");
    const square = features.map((f) => f.properties).filter((p) => Math.abs(p.bbox_x - 34) <= 1 && Math.abs(p.bbox_y - 34) <= 1);
    expect(square).toHaveLength(1);
    expect(Math.abs(square[0]!.bbox_w - 12)).toBeLessThanOrEqual(1);
    expect(Math.abs(square[0]!.bbox_h - 12)).toBeLessThanOrEqual(1);
    for (const [cx, cy] of doomed) {
      const inside = features.filter(({ properties: p }) => cx >= p.bbox_x && cx < p.bbox_x + p.bbox_w && cy >= p.bbox_y && cy < p.bbox_y + p.bbox_h);
      expect(inside).toEqual([]);
    }
  }, 120_000);

  it("compares the model's segmentation with the corrections side by side, scoring the model against them", async () => {
    await open("p.crumbs >> a >> nth=1"); // the image's page
    // The two most recent are chosen: the corrections just saved, and the model's segmentation they came from.
    await open(".compare-form button");
    const sides = page.locator(".compare-side");
    expect(await sides.count()).toBe(2);
    const cells = async (i: number) => Number((await sides.nth(i).locator(".cells").textContent())!.replaceAll(",", ""));
    const [corrected, model] = [await cells(0), await cells(1)];
    expect(corrected).toBe(model - 2); // three deleted, one drawn
    expect(await sides.nth(0).locator("h2").textContent()).toBe("imported annotation");
    expect(await sides.nth(0).innerText()).toContain("the reference the other is scored against");
    // The model's cells that were kept match exactly; the three deleted are false positives, the drawn one a miss.
    expect(Number(await sides.nth(1).locator(".ap50").textContent())).toBeCloseTo((model - 3) / (model + 1), 2);
    // Each side draws the image's preview and every outline over it.
    const drawn = await page.evaluate<{ tiles: number; outlines: number; width: number }[]>(`
      [...document.querySelectorAll("svg.overlay")].map((svg) => ({
        tiles: svg.querySelectorAll("image").length,
        outlines: (svg.querySelector("path.outlines")?.getAttribute("d") ?? "").split("M").length - 1,
        width: svg.getBoundingClientRect().width,
      }))`);
    expect(drawn).toEqual([
      { tiles: expect.any(Number), outlines: corrected, width: expect.any(Number) },
      { tiles: expect.any(Number), outlines: model, width: expect.any(Number) },
    ]);
    for (const side of drawn) {
      expect(side.tiles).toBeGreaterThan(0);
      expect(side.width).toBeGreaterThan(300);
    }
    await shot("compare");
  }, 60_000);

  it("lists the models and deletes an image after confirmation", async () => {
    await open("nav >> text=Models");
    expect(await page.locator("tr[data-model-id=cpsam]").innerText()).toContain("cpsam");
    await shot("models");
    await open("nav >> text=Images");
    page.once("dialog", (dialog) => dialog.accept());
    await page.locator("#images tr", { hasText: "large-noise.png" }).locator("button:has-text('Delete')").click();
    await page.waitForLoadState("load");
    await expect.poll(() => page.locator("#images tbody tr").count()).toBe(1);
    // nuclei.png and the corrections saved from its viewer: an import is stored, and counts.
    expect(await page.locator("#usage-storage").innerText()).toContain("2 / 100");
    expect(await page.locator("#usage-analyses").innerText()).toContain("1 / 200");
    await shot("images");
  }, 60_000);

  it("shows a large image's tiled preview before it is segmented", async () => {
    const file = join(files, "large-nuclei.png");
    const { data } = syntheticNuclei(LARGE.width, LARGE.height);
    writeFileSync(file, encodePng({ ...LARGE, data, depth: 16, channels: 1 }));
    await page.setInputFiles("#file-input", file);
    await expect.poll(() => page.locator("#uploads").innerText(), { timeout: 60_000 }).toMatch(/large-nuclei\.png\s+ready · 2600 × 1100/);
    await expect.poll(() => page.locator("#images tbody tr").count(), { timeout: 10_000 }).toBe(2);
    await page.waitForSelector("html[data-ready=true]", { state: "attached" });

    await open("#images a:has-text('large-nuclei.png')");
    expect(await page.locator("#predictions").innerText()).toContain("No predictions yet.");
    // Made by a preview job asked for at upload; the page waits for it and says so meanwhile.
    await page.waitForSelector("#viewer[data-preview=ready][data-loaded=true]", { timeout: 120_000 });
    expect(await page.locator("#viewer").getAttribute("data-levels")).toBe("3");
    await expect.poll(() => page.evaluate<number>(`(${COUNT_PIXELS})((r, g, b) => r > 200 && g > 200 && b > 200)`)).toBeGreaterThan(2000);
    expect(await page.locator("#viewer-status").textContent()).toBe("2,600 × 1,100 px");
    await shot("image-preview");
  }, 180_000);

  it("draws the outlines over a large image's full-resolution tiles, fetched only where the view is", async () => {
    const imageId = new URL(page.url()).pathname.split("/").at(-1)!;
    const labels = join(files, "large-nuclei-labels.png");
    writeFileSync(labels, encodePng({ ...LARGE, data: syntheticNucleiLabels(LARGE.width, LARGE.height), depth: 16, channels: 1 }));
    const form = new FormData();
    form.append("image_id", imageId);
    form.append("file", new Blob([readFileSync(labels)], { type: "image/png" }), "labels.png");
    const imported = await fetch(`${stack.api}/segmentation`, { method: "POST", headers: { Authorization: `Bearer ${stack.key}` }, body: form });
    expect(imported.status).toBe(201);
    const { cell_count } = (await imported.json()) as { cell_count: number };
    const centres = nucleusCentres(LARGE.width, LARGE.height);
    expect(cell_count).toBe(centres.length);

    await page.reload();
    await page.waitForSelector("html[data-ready=true]", { state: "attached" });
    await open("a:has-text('View cells')");
    await page.waitForSelector("#viewer[data-loaded=true]");
    expect(await page.locator("#cell-count").textContent()).toBe(cell_count.toLocaleString("en-US"));
    // Fitted, a screen pixel covers about two image pixels: the half-resolution level is drawn, none of the full one.
    await expect.poll(() => page.locator("#viewer").getAttribute("data-level-factor")).toBe("2");
    expect(await page.locator("#viewer").getAttribute("data-finest-tiles-loaded")).toBeNull();
    await shot("viewer-large-image");

    // Zoom in on the middle in one wheel turn (a screen pixel now shows less than an image pixel):
    // the full-resolution tiles in view load, not all fifteen.
    const canvasBox = (await page.locator("#viewer-canvas").boundingBox())!;
    await page.mouse.move(canvasBox.x + canvasBox.width / 2, canvasBox.y + canvasBox.height / 2);
    await page.mouse.wheel(0, -800);
    await expect.poll(() => page.locator("#viewer").getAttribute("data-level-factor")).toBe("1");
    await expect.poll(async () => Number(await page.locator("#viewer").getAttribute("data-finest-tiles-loaded")), { timeout: 30_000 }).toBeGreaterThan(0);
    await page.waitForTimeout(500);
    expect(Number(await page.locator("#viewer").getAttribute("data-finest-tiles-loaded"))).toBeLessThan(15);

    // What a person sees: the nucleus nearest the middle is white on the tiles, the space between
    // nuclei dark, and its outline lies on the nucleus's edge.
    const [cx, cy] = centres.reduce((best, c) => (Math.hypot(c[0] - 1300, c[1] - 550) < Math.hypot(best[0] - 1300, best[1] - 550) ? c : best));
    await page.uncheck("#show-outlines");
    const pixel = (x: number, y: number) => page.evaluate<number[]>(`(${PIXEL_AT})(${x}, ${y})`);
    expect(Math.min(...(await pixel(cx, cy)))).toBeGreaterThan(200);
    expect(Math.max(...(await pixel(cx + 20, cy + 20)))).toBeLessThan(60);
    await page.check("#show-outlines");
    expect(await page.evaluate<number>(`(${COUNT_PIXELS})((r, g, b) => r > 200 && g > 170 && b < 90)`)).toBeGreaterThan(1000);
    // The cell under the pointer at that white spot is that nucleus (its centroid within a pixel).
    const { scale, x, y } = await viewerView();
    const box = (await page.locator("#viewer-canvas").boundingBox())!;
    await page.mouse.move(box.x + cx * scale + x, box.y + cy * scale + y);
    await expect.poll(() => page.locator("#viewer").getAttribute("data-hovered-cell")).not.toBe("");
    const facts = await page.locator("#cell-facts").innerText();
    expect(Math.abs(Number(/Centroid x\s+([\d.]+)/.exec(facts)![1]) - cx)).toBeLessThanOrEqual(1);
    expect(Math.abs(Number(/Centroid y\s+([\d.]+)/.exec(facts)![1]) - cy)).toBeLessThanOrEqual(1);
    await shot("viewer-tiles-zoomed");
    await page.setViewportSize({ width: 2560, height: 1440 });
    await page.waitForTimeout(500);
    await shot("viewer-tiles-zoomed-large-screen");
    await page.setViewportSize({ width: 1440, height: 900 });
  }, 120_000);

  it("shows a segmentation of 90,000 cells zoomed out as its image alone, and zoomed in the outlines of the tiles in view", async () => {
    // A 2400² image of 90,000 squares, 6 px on a side on an 8-px grid: 3 x 3 outline tiles.
    const side = 2400;
    const upload = new FormData();
    upload.append(
      "file",
      new Blob([new Uint8Array(encodePng({ width: side, height: side, data: new Uint8Array(side * side).fill(40), depth: 8, channels: 1 }))]),
      "dense.png",
    );
    const uploaded = await fetch(`${stack.api}/upload`, { method: "POST", headers: { Authorization: `Bearer ${stack.key}` }, body: upload });
    expect(uploaded.status).toBe(201);
    const imageId = ((await uploaded.json()) as { image: { id: string } }).image.id;
    const squares = [];
    for (let y = 1; y < side; y += 8) {
      for (let x = 1; x < side; x += 8) {
        squares.push({
          type: "Feature",
          properties: {},
          geometry: {
            type: "Polygon",
            coordinates: [
              [
                [x, y],
                [x + 6, y],
                [x + 6, y + 6],
                [x, y + 6],
                [x, y],
              ],
            ],
          },
        });
      }
    }
    const form = new FormData();
    form.append("image_id", imageId);
    form.append("file", new Blob([JSON.stringify({ type: "FeatureCollection", features: squares })], { type: "application/geo+json" }), "dense.geojson");
    const imported = await fetch(`${stack.api}/segmentation`, { method: "POST", headers: { Authorization: `Bearer ${stack.key}` }, body: form });
    expect(imported.status).toBe(201);
    const { cell_count, segmentation_id: segmentationId } = (await imported.json()) as { cell_count: number; segmentation_id: string };
    expect(cell_count).toBe(90_000);

    // This segmentation's tiles only: the last test's viewer, still open, loads its own cells anew
    // when a runner has measured that import's intensities.
    const tilesAsked: string[] = [];
    const onRequest = (request: { url(): string }) => {
      const match = new RegExp(`/segmentation/${segmentationId}/outlines/(\\d+/\\d+)$`).exec(request.url());
      if (match) tilesAsked.push(match[1]!);
    };
    page.on("request", onRequest);
    await page.goto(new URL(`/dashboard/images/${imageId}`, stack.api).toString());
    await page.waitForSelector("html[data-ready=true]", { state: "attached" });
    await open("a:has-text('View cells')");
    await page.waitForSelector("#viewer[data-loaded=true]");
    expect(await page.locator("#viewer").getAttribute("data-outline-tiles")).toBe("3x3");
    expect(await page.locator("#viewer-status").textContent()).toBe("90,000 cells · zoom in to see their outlines");
    expect(await page.locator("#viewer-canvas").getAttribute("data-outlines-drawn")).toBe("0");
    expect(tilesAsked).toEqual([]);
    await shot("viewer-dense-fitted");

    // One wheel turn in on the middle: the four tiles around it are asked for, not all nine.
    const canvasBox = (await page.locator("#viewer-canvas").boundingBox())!;
    await page.mouse.move(canvasBox.x + canvasBox.width / 2, canvasBox.y + canvasBox.height / 2);
    await page.mouse.wheel(0, -800);
    await expect.poll(() => page.locator("#viewer-status").textContent(), { timeout: 30_000 }).toMatch(/^[\d,]+ of 90,000 outlines, those near the view$/);
    // Each of the four holds the 128 x 128 squares whose corner is in it.
    await expect.poll(() => page.locator("#viewer-canvas").getAttribute("data-outlines-drawn"), { timeout: 30_000 }).toBe("65536");
    expect(await page.locator("#viewer-status").textContent()).toBe("65,536 of 90,000 outlines, those near the view");
    // (Asked again, the same four, if the import's intensities are measured meanwhile: the viewer then loads its cells anew.)
    expect([...new Set(tilesAsked)].sort()).toEqual(["0/0", "0/1", "1/0", "1/1"]);
    expect(await page.evaluate<number>(`(${COUNT_PIXELS})((r, g, b) => r > 200 && g > 170 && b < 90)`)).toBeGreaterThan(10_000);
    // The square under the pointer is the one drawn there: the one whose corner is (1201, 1201).
    const { scale, x, y } = await viewerView();
    const box = (await page.locator("#viewer-canvas").boundingBox())!;
    await page.mouse.move(box.x + 1203.5 * scale + x, box.y + 1203.5 * scale + y);
    await expect.poll(() => page.locator("#viewer").getAttribute("data-hovered-cell")).not.toBe("");
    const facts = await page.locator("#cell-facts").innerText();
    expect(facts).toMatch(/Area\s+36 px²/);
    expect(facts).toMatch(/Centroid x\s+1204\.0/);
    await shot("viewer-dense-zoomed");

    await page.click("#zoom-fit");
    await expect.poll(() => page.locator("#viewer-canvas").getAttribute("data-outlines-drawn")).toBe("0");
    expect(await page.locator("#viewer-status").textContent()).toBe("90,000 cells · zoom in to see their outlines");
    page.off("request", onRequest);
    const deleted = await fetch(`${stack.api}/image/${imageId}`, { method: "DELETE", headers: { Authorization: `Bearer ${stack.key}` } });
    expect(deleted.status).toBe(204);
  }, 180_000);

  it("starts a training from selected images and shows its progress, then its scores", async () => {
    await open("nav >> text=Models");
    await shot("models-training-form");
    // Both images have a correction (one saved in the viewer, one imported): each is marked and selected to start with.
    for (const name of ["nuclei.png", "large-nuclei.png"]) {
      const box = page.locator(`input[aria-label='Train on ${name}']`);
      expect(await box.isChecked()).toBe(true);
      expect(await page.locator("#trainable-images tr", { has: box }).innerText()).toContain("corrected");
    }
    expect(await page.locator("#training-warning").isVisible()).toBe(false);
    await page.uncheck("input[aria-label='Train on large-nuclei.png']");
    await page.fill("#training-form input[name=name]", "dashboard-nuclei");
    await page.fill("#training-form input[name=steps]", "1");
    await page.click("button:has-text('Start training')");
    const row = page.locator("#trainings tbody tr").first();
    await expect.poll(() => row.getAttribute("data-job-id")).toMatch(/.+/);
    expect(await row.innerText()).toMatch(/cpsam\s+1\s+(submitted|started)/);
    await expect.poll(() => row.getAttribute("data-status"), { timeout: 60_000 }).toBe("STARTED");
    await shot("training-running");
    await expect.poll(() => row.getAttribute("data-status"), { timeout: 300_000, interval: 2000 }).toBe("COMPLETED");
    // One image: bands of it are held out from training (in turn, where one band would hold too few
    // objects); the sentence says plainly whether the base was beaten, on how many objects, by how much.
    await expect
      .poll(() => row.locator(".result").innerText())
      .toMatch(
        /^(Beat its base|Unverified|Too few to tell|Did not beat its base): AP@0\.5 \d\.\d{3} against \d\.\d{3} on (1 held-out region of 1 image|every object once, in \d folds of 1 image held out in turn) \(\d+ objects?\), [+-]\d\.\d{3} \(95% interval [+-]\d\.\d{3} to [+-]\d\.\d{3}\)/,
      );
    // The new model is listed above without a reload, as the form promises.
    expect(await page.locator("#own-models tr", { hasText: "dashboard-nuclei" }).count()).toBe(1);
    await open("a:has-text('see the new model')");
    const model = page.locator("tr", { hasText: "dashboard-nuclei" });
    expect(await model.innerText()).toMatch(
      /(AP@0\.5 \d\.\d{3} \(base \d\.\d{3}\)|unverified: AP@0\.5 \d\.\d{3} \(base \d\.\d{3}\), could be noise|same as base: AP@0\.5 \d\.\d{3}, (not beaten|too few to tell a gain)) · 1 step · 1 image/,
    );
    await shot("models-trained");
  }, 420_000);

  it("lets a member of several organizations switch between them", async () => {
    // A session as Cloudflare Access opens it for a member (deployed sign-in; this stack signs in with links).
    const email = "ada@lab.example";
    await stack.admin.createOrganization("e2e-core", {});
    await stack.admin.addMember(stack.slug, email);
    await stack.admin.addMember("e2e-core", email);
    const token = randomBytes(32).toString("hex");
    const tokenHash = createHash("sha256").update(token).digest("hex");
    stack.sql(`INSERT INTO dashboard_sessions (id, token_hash, org_id, email, expires_at, created_at)
      SELECT '${crypto.randomUUID()}', '${tokenHash}', id, '${email}', ${Date.now() + 3_600_000}, ${Date.now()} FROM organizations WHERE slug = '${stack.slug}'`);
    await context.addCookies([
      // Host-only, as __Host- demands: Chromium takes such a cookie by domain and path, not by url.
      { name: "__Host-cellseg_session", value: token, domain: new URL(stack.api).hostname, path: "/", secure: true, httpOnly: true, sameSite: "Lax" },
    ]);
    await page.goto(new URL("/dashboard", stack.api).toString());
    await page.waitForSelector("html[data-ready=true]", { state: "attached" });
    const switcher = page.locator(".org-switcher select");
    expect(await switcher.locator("option:checked").textContent()).toBe(stack.slug);
    expect(await page.locator("#images tbody tr").count()).toBe(2);
    await shot("org-switcher");

    await Promise.all([page.waitForEvent("load"), switcher.selectOption({ label: "e2e-core" })]);
    await page.waitForSelector("html[data-ready=true]", { state: "attached" });
    expect(await page.locator(".org-switcher select option:checked").textContent()).toBe("e2e-core");
    expect(await page.locator("#usage-storage").innerText()).toContain("0 / 100");
    expect(await page.locator("main").innerText()).not.toContain("nuclei.png");
    await shot("org-switched");
  }, 60_000);

  it("plots a histogram and a scatter of the cells' measurements; a range dragged on them highlights its cells in the viewer", async () => {
    // Signed in afresh, so this test stands alone (`-t plots`).
    await page.goto(await stack.loginLink());
    await Promise.all([page.waitForURL((url) => url.pathname === "/dashboard"), page.click("button:has-text('Sign in')")]);
    await page.waitForSelector("html[data-ready=true]", { state: "attached" });
    // A 480 x 360 image of 48 rectangles on a 60-px grid, each of its own width and height, so
    // areas and perimeters spread and do not follow one another.
    const auth = { Authorization: `Bearer ${stack.key}` };
    const upload = new FormData();
    upload.append(
      "file",
      new Blob([new Uint8Array(encodePng({ width: 480, height: 360, data: new Uint8Array(480 * 360).fill(40), depth: 8, channels: 1 }))]),
      "rectangles.png",
    );
    const uploaded = await fetch(`${stack.api}/upload`, { method: "POST", headers: auth, body: upload });
    expect(uploaded.status).toBe(201);
    const imageId = ((await uploaded.json()) as { image: { id: string } }).image.id;
    const rectangles = Array.from({ length: 48 }, (_, i) => {
      const [x, y] = [10 + (i % 8) * 60, 10 + Math.floor(i / 8) * 60];
      const [w, h] = [4 + ((i * 7) % 30), 4 + ((i * 11) % 17)];
      const ring = [
        [x, y],
        [x + w, y],
        [x + w, y + h],
        [x, y + h],
        [x, y],
      ];
      return { type: "Feature", properties: {}, geometry: { type: "Polygon", coordinates: [ring] } };
    });
    const form = new FormData();
    form.append("image_id", imageId);
    form.append(
      "file",
      new Blob([JSON.stringify({ type: "FeatureCollection", features: rectangles })], { type: "application/geo+json" }),
      "rectangles.geojson",
    );
    const imported = await fetch(`${stack.api}/segmentation`, { method: "POST", headers: auth, body: form });
    expect(imported.status).toBe(201);
    const { segmentation_id: segmentationId } = (await imported.json()) as { segmentation_id: string };
    /** measurements.csv's `columns`, one array of numbers per row. */
    const measurements = async (...columns: string[]) => {
      const response = await fetch(`${stack.api}/export/${segmentationId}/measurements.csv?${columns.map((c) => `columns=${c}`).join("&")}`, { headers: auth });
      return (await response.text())
        .trim()
        .split("\r\n")
        .slice(1)
        .map((line) => line.split(",").map(Number));
    };

    await page.goto(new URL(`/dashboard/segmentations/${segmentationId}`, stack.api).toString());
    await page.waitForSelector("#viewer[data-loaded=true]");
    // The values are asked for once the card is in sight.
    const plots = page.locator("#plots");
    await plots.scrollIntoViewIfNeeded();
    await page.waitForSelector("#plots[data-plot=histogram]");
    expect(await page.locator("#plot-x").inputValue()).toBe("area_px");
    expect(await page.locator("#plot-note").textContent()).toBe("Showing 48 cells.");
    expect(await page.locator("#plot-clear").isVisible()).toBe(false); // nothing chosen yet
    // What a person sees: the histogram's blue bars.
    const bars = () => page.evaluate<number>(`(${COUNT_CANVAS_PIXELS})("plot-canvas", (r, g, b) => b > 200 && r < 80)`);
    expect(await bars()).toBeGreaterThan(500);
    await shot("plots-histogram");

    /** Drags over the plot from (fx0, fy0) to (fx1, fy1), fractions of its drawing area (left 50 px, right 10, top 8, bottom 36). */
    const drag = async (fx0: number, fy0: number, fx1: number, fy1: number) => {
      const box = (await page.locator("#plot-canvas").boundingBox())!;
      const at = (fx: number, fy: number): [number, number] => [box.x + 50 + fx * (box.width - 60), box.y + 8 + fy * (box.height - 44)];
      await page.mouse.move(...at(fx0, fy0));
      await page.mouse.down();
      await page.mouse.move(...at((fx0 + fx1) / 2, (fy0 + fy1) / 2), { steps: 4 });
      await page.mouse.move(...at(fx1, fy1), { steps: 4 });
      await page.mouse.up();
    };
    const range = async (axis: "x" | "y") => (await plots.getAttribute(`data-selection-${axis}`))!.split(",").map(Number) as [number, number];
    const highlighted = () => page.locator("#viewer-canvas").getAttribute("data-outlines-highlighted");
    const highlightPixels = () => page.evaluate<number>(`(${COUNT_PIXELS})((r, g, b) => r > 180 && g < 120 && b > 200)`);

    // A range of areas: the count shown is the CSV's count of cells in it, and so many outlines turn magenta.
    await drag(0.3, 0.5, 0.7, 0.5);
    const [lo, hi] = await range("x");
    const inArea = (await measurements("area_px")).filter(([area]) => area! >= lo && area! <= hi).length;
    expect(inArea).toBeGreaterThan(0);
    expect(inArea).toBeLessThan(48);
    expect(await plots.getAttribute("data-selected-count")).toBe(String(inArea));
    expect(await page.locator("#plot-selection").textContent()).toMatch(new RegExp(`^area_px [\\d.,]+ – [\\d.,]+: ${inArea} of 48 cells$`));
    await expect.poll(highlighted).toBe(String(inArea));
    expect(await page.locator("#plot-clear").isVisible()).toBe(true);
    expect(await highlightPixels()).toBeGreaterThan(inArea * 10);
    await shot("plots-histogram-range");

    // A scatter of area against perimeter, and a rectangle on it: cells within both ranges.
    await page.selectOption("#plot-y", "perimeter_px");
    await page.waitForSelector("#plots[data-plot=scatter]");
    expect(await highlighted()).toBeNull(); // a new plot starts with nothing chosen
    await drag(0.1, 0.9, 0.8, 0.2);
    const [[xlo, xhi], [ylo, yhi]] = [await range("x"), await range("y")];
    const inBoth = (await measurements("area_px", "perimeter_px")).filter(([a, p]) => a! >= xlo && a! <= xhi && p! >= ylo && p! <= yhi).length;
    expect(inBoth).toBeGreaterThan(0);
    expect(inBoth).toBeLessThan(48);
    expect(await plots.getAttribute("data-selected-count")).toBe(String(inBoth));
    await expect.poll(highlighted).toBe(String(inBoth));
    await shot("plots-scatter-range");

    // Clear: nothing chosen, no outline highlighted, every one yellow again.
    await page.click("#plot-clear");
    await expect.poll(highlighted).toBeNull();
    expect(await plots.getAttribute("data-selected-count")).toBeNull();
    expect(await highlightPixels()).toBe(0);
    expect(await page.locator("#plot-clear").isVisible()).toBe(false);

    // µm needs a pixel size, which this PNG lacks: the plot says so rather than drawing nothing.
    await page.selectOption("#plot-y", "");
    await page.selectOption("#plot-x", "area_um2");
    await page.waitForSelector("#plots[data-plot=empty]");
    expect(await page.locator("#plot-note").textContent()).toBe("No values of area_um2: the image's pixel size is unknown.");
    const deleted = await fetch(`${stack.api}/image/${imageId}`, { method: "DELETE", headers: auth });
    expect(deleted.status).toBe(204);
  }, 180_000);

  it("draws a scale bar over an image whose file gives its pixel size, of a round length at the zoom shown", async () => {
    // Signed in afresh: the test before moved the session to another organization.
    await page.goto(await stack.loginLink());
    await Promise.all([page.waitForURL((url) => url.pathname === "/dashboard"), page.click("button:has-text('Sign in')")]);
    await page.waitForSelector("html[data-ready=true]", { state: "attached" });
    // An OME-TIFF written by tifffile: 8 x 6 pixels of 0.325 µm.
    const form = new FormData();
    form.append("file", new File([readFileSync(new URL("../reference/tiff/ome-325nm-2ch.ome.tif", import.meta.url))], "calibrated.ome.tif"));
    const uploaded = await fetch(`${stack.api}/upload`, { method: "POST", body: form, headers: { Authorization: `Bearer ${stack.key}` } });
    const { image } = (await uploaded.json()) as { image: { id: string; pixel_size: unknown } };
    expect(image.pixel_size).toEqual({ x_um: 0.325, y_um: 0.325, source: "ome" });
    await page.goto(new URL(`/dashboard/images/${image.id}`, stack.api).toString());
    await page.waitForSelector("#viewer[data-loaded=true]", { timeout: 120_000 });
    const bar = async () => {
      const [label, length] = (await page.locator("#viewer").getAttribute("data-scale-bar"))!.split("|");
      const scale = Number((await page.locator("#viewer").getAttribute("data-view"))!.split(",")[0]);
      return { label, length: Number(length), scale };
    };
    const fitted = await bar();
    // The bar's length on screen is its label's length in image pixels, at most 140 screen pixels.
    const um = (label: string) => (label.endsWith(" nm") ? Number.parseFloat(label) / 1000 : Number.parseFloat(label));
    expect(fitted.length).toBeLessThanOrEqual(140);
    expect(fitted.length).toBeCloseTo((um(fitted.label!) / 0.325) * fitted.scale, 1);
    expect(fitted.label).toMatch(/^(1|2|5)(0|00)? (nm|µm)$/);
    // Drawn: light pixels where the bar lies, bottom left of the canvas.
    const light = await page.evaluate<number>(`(() => {
      const canvas = document.getElementById("viewer-canvas");
      const dpr = window.devicePixelRatio || 1;
      const y = Math.round((canvas.clientHeight - 44 + 6) * dpr);
      const d = canvas.getContext("2d").getImageData(Math.round(14 * dpr), y, 1, 1).data;
      return d[0] + d[1] + d[2];
    })()`);
    expect(light).toBeGreaterThan(700);
    await page.click("#zoom-out");
    await page.click("#zoom-out");
    const zoomedOut = await bar();
    expect(um(zoomedOut.label!)).toBeGreaterThan(um(fitted.label!));
    await shot("scale-bar");
  }, 180_000);

  it("holds its layout at 1280x800, 1400x900 and 1920x1080: badges and model names on one line, the viewer's editing controls in sight", async () => {
    // The pages as the tests above left them: images with completed predictions, corrections, a training and its model.
    await page.goto(await stack.loginLink());
    await Promise.all([page.waitForURL((url) => url.pathname === "/dashboard"), page.click("button:has-text('Sign in')")]);
    await page.waitForSelector("html[data-ready=true]", { state: "attached" });
    await open("#images a:text-is('nuclei.png')");
    const imagePage = new URL(page.url()).pathname;
    const viewer = (await page.locator("#predictions a:has-text('View cells')").first().getAttribute("href"))!;
    const visit = async (path: string) => {
      await page.goto(new URL(path, stack.api).toString());
      await page.waitForSelector("html[data-ready=true]", { state: "attached" });
    };
    const shots = mkdtempSync(join(tmpdir(), "cellseg-layout-"));
    console.log(`layout screenshots: ${shots}`);
    for (const size of WINDOW_SIZES) {
      const label = `${size.width}x${size.height}`;
      await page.setViewportSize(size);
      const pages: [string, string, string][] = [
        ["images", "/dashboard", "#images .badge"],
        ["image", imagePage, "#predictions .badge"],
        ["models", "/dashboard/models", "tr[data-model-id=cpsam-large]"],
      ];
      for (const [name, path, expected] of pages) {
        await visit(path);
        expect(await page.locator(expected).count()).toBeGreaterThan(0);
        expect(await layoutProblems(page), `${name} at ${label}`).toEqual([]);
        await page.screenshot({ path: join(shots, `${label}-${name}.png`), fullPage: true });
      }
      await visit(viewer);
      await page.waitForSelector("#viewer[data-loaded=true]");
      expect(await layoutProblems(page), `viewer at ${label}`).toEqual([]);
      for (const control of ["#edit-toggle", "#show-outlines", "#zoom-fit"])
        expect(await inSight(page, control), `${control} at ${label}`).toMatchObject({ inSight: true });
      await page.click("#edit-toggle");
      expect(await inSight(page, "#save-corrections"), `Save corrections at ${label}`).toMatchObject({ inSight: true });
      expect(await inSight(page, "#discard-corrections"), `Discard at ${label}`).toMatchObject({ inSight: true });
      await page.screenshot({ path: join(shots, `${label}-viewer-editing.png`) });
      await page.click("#edit-toggle");
    }
    await page.setViewportSize({ width: 1440, height: 900 });
  }, 120_000);
});
