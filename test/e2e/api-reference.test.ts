// The API reference in a real browser (Debian's chromium through playwright-core, as in
// dashboard.test.ts) with every origin but the local stack's blocked, as on a machine offline.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext } from "playwright-core";
import { launchChromium } from "./chromium.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalStack, startStack } from "../../scripts/local-stack.ts";

let stack: LocalStack;
let context: BrowserContext;
let profile: string;

beforeAll(async () => {
  stack = await startStack();
  profile = mkdtempSync(join(tmpdir(), "cellseg-chromium-"));
  context = await launchChromium(profile);
}, 180_000);

afterAll(async () => {
  await context?.close();
  await stack?.stop();
  if (profile) rmSync(profile, { recursive: true, force: true });
}, 60_000);

describe("the API reference at /api/v1/docs", () => {
  it("renders every operation, styled, with other origins blocked and nothing refused by its policy", async () => {
    const origin = new URL(stack.api).origin;
    const blocked: string[] = [];
    await context.route("**/*", (route) => {
      if (new URL(route.request().url()).origin === origin) return route.continue();
      blocked.push(route.request().url());
      return route.abort("internetdisconnected");
    });
    const page = context.pages()[0] ?? (await context.newPage());
    // A refused script or style shows as a console error (a Content-Security-Policy violation).
    const errors: string[] = [];
    page.on("console", (message) => message.type() === "error" && errors.push(message.text()));
    page.on("pageerror", (error) => errors.push(error.message));

    const response = await page.goto(`${stack.api}/docs`, { waitUntil: "networkidle" });
    expect(response?.status()).toBe(200);
    await expect(page.locator("h1").innerText()).resolves.toMatch(/^cellseg API/);
    const operations = await page.locator("section.op").count();
    const documented = (await (await fetch(`${stack.api}/openapi.json`)).json()) as { paths: Record<string, object> };
    expect(operations).toBe(Object.values(documented.paths).reduce((n, item) => n + Object.keys(item).length, 0));
    await expect(page.locator("#submitPrediction h3").innerText()).resolves.toContain("POST /predict");
    // The inline stylesheet applied: the policy admitted it by its nonce.
    const badge = await page.locator("#submitPrediction .method").evaluate((el) => el.ownerDocument.defaultView!.getComputedStyle(el).backgroundColor);
    expect(badge).toBe("rgb(30, 95, 180)");
    await page.screenshot({ path: "/tmp/cellseg-api-reference.png" });

    expect(blocked).toEqual([]);
    expect(errors).toEqual([]);
  }, 60_000);
});
