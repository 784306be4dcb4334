// The dashboard in a real browser (Debian's chromium driven by playwright-core) against the local
// stack: sign in with a one-time link, manage API keys, upload by drag and drop and through the
// resumable protocol (with a failed part retried), segment an image, look at its cells, download.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encode as encodePng } from "fast-png";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type LocalStack, startStack } from "../../scripts/local-stack.ts";
import { syntheticNuclei } from "./stack.ts";

const CHROMIUM = "/usr/bin/chromium";
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
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport: { width: 1440, height: 900 },
    acceptDownloads: true,
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(30_000);
  // A script error on any page fails the test that caused it (see afterEach).
  page.on("pageerror", (error) => pageErrors.push(error.message));
  page.on("console", (message) => message.type() === "error" && !message.text().startsWith("Failed to load resource") && pageErrors.push(message.text()));
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
/** Counts the viewer canvas's pixels whose colour passes a test. */
const COUNT_PIXELS = `(test) => {
  const canvas = document.getElementById("viewer-canvas");
  const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let n = 0;
  for (let i = 0; i < data.length; i += 4) if (test(data[i], data[i + 1], data[i + 2])) n++;
  return n;
}`;

describe("the dashboard in a browser", () => {
  it("signs in with a one-time link and shows the organization's usage", async () => {
    await page.goto(await stack.loginLink());
    await page.waitForSelector("html[data-ready=true]", { state: "attached" });
    expect(new URL(page.url()).pathname).toBe("/dashboard");
    await expect.poll(() => page.locator(".topbar .org").textContent()).toBe(stack.slug);
    expect(await page.locator("#usage-images").innerText()).toContain("0 / 100");
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
    expect(await page.locator("#usage-images").innerText()).toContain("2 / 100");
  }, 120_000);

  it("runs a prediction, shows its progress, and opens the cells over the image", async () => {
    await open("#images a:has-text('nuclei.png')");
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
    await shot("viewer-hover");

    await page.click("#zoom-in");
    expect(await page.locator("#zoom-level").textContent()).toBe(`${Math.round(scale * 150)}%`);
    await page.setViewportSize({ width: 2560, height: 1440 });
    await page.click("#zoom-fit");
    await shot("viewer-large-screen");
    await page.setViewportSize({ width: 1440, height: 900 });

    const [download] = await Promise.all([page.waitForEvent("download"), page.click("a[data-export='measurements.csv']")]);
    expect(download.suggestedFilename()).toBe("nuclei-measurements.csv");
    const csv = readFileSync((await download.path())!, "utf8");
    expect(csv.trim().split("\n")).toHaveLength(cells + 1);
    expect(csv.split("\n")[0]).toContain("area_px");
    const [zip] = await Promise.all([page.waitForEvent("download"), page.click("a[data-export='rois.zip']")]);
    expect(readFileSync((await zip.path())!).subarray(0, 2).toString()).toBe("PK");
  }, 180_000);

  it("lists the models and deletes an image after confirmation", async () => {
    await open("nav >> text=Models");
    expect(await page.locator("tr[data-model-id=cpsam]").innerText()).toContain("cpsam");
    await shot("models");
    await open("nav >> text=Images");
    page.once("dialog", (dialog) => dialog.accept());
    await page.locator("#images tr", { hasText: "large-noise.png" }).locator("button:has-text('Delete')").click();
    await page.waitForLoadState("load");
    await expect.poll(() => page.locator("#images tbody tr").count()).toBe(1);
    expect(await page.locator("#usage-images").innerText()).toContain("1 / 100");
    expect(await page.locator("#usage-analyses").innerText()).toContain("1 / 200");
    await shot("images");
  }, 60_000);
});
