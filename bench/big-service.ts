// npm run bench:big-service [-- --side 32768] [--out DIR]
// A whole slide through the whole service, as a user sends one: a synthetic fluorescence mosaic
// (test/fixtures/mosaic.ts) written as an uncompressed tiled 16-bit BigTIFF (2 GiB at 32768²), then,
// on the local stack with one CPU runner, `npm run client -- segment` (resumable upload,
// prediction, every export), then the dashboard's viewer in Chromium, fitted and zoomed to full
// resolution. Prints each phase's time, the runner's peak RSS, the cells against the truth, each
// export's size and count, and what the viewer loaded. No ../shared needed.
import { spawn } from "node:child_process";
import { createReadStream, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";
import { startStack } from "../scripts/local-stack.ts";
import { SyntheticMosaic } from "../test/fixtures/mosaic.ts";
import { writeTiledBigTiff } from "./tiled-bigtiff-file.ts";

const { values } = parseArgs({
  options: {
    side: { type: "string", default: "32768" },
    out: { type: "string" },
    chromium: { type: "string", default: "/usr/bin/chromium" },
  },
});
const side = Number(values.side);
const work = values.out ?? join(tmpdir(), `cellseg-big-service-${side}`);
mkdirSync(work, { recursive: true });
const seconds = (since: number) => ((performance.now() - since) / 1000).toFixed(1);
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/** Occurrences in a file, counted as it streams past (a GeoJSON of half a million cells is ~300 MB). */
async function countOccurrences(path: string, needle: string): Promise<number> {
  let count = 0;
  let carry = "";
  for await (const chunk of createReadStream(path, { encoding: "utf8", highWaterMark: 1 << 20 })) {
    const text = carry + chunk;
    let at = text.indexOf(needle);
    while (at >= 0) {
      count++;
      at = text.indexOf(needle, at + needle.length);
    }
    carry = text.slice(text.length - (needle.length - 1)); // a needle split across chunks is still found
  }
  return count;
}

/** Entries in a ZIP from its end records (ZIP64's when the count passes 65,535). */
function zipEntries(path: string): number {
  const bytes = readFileSync(path);
  const tail = bytes.subarray(Math.max(0, bytes.length - 65_557));
  for (let at = tail.length - 20; at >= 0; at--) {
    if (tail.readUInt32LE(at) === 0x07064b50) return Number(bytes.readBigUInt64LE(Number(tail.readBigUInt64LE(at + 8)) + 32)); // ZIP64 locator -> record
  }
  for (let at = tail.length - 22; at >= 0; at--) if (tail.readUInt32LE(at) === 0x06054b50) return tail.readUInt16LE(at + 10);
  throw new Error(`${path} has no ZIP end record`);
}

/** The runner's resident and peak memory from /proc (Linux). */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024;
  return { rss: kib("VmRSS"), peak: kib("VmHWM") };
}

async function main() {
  const mosaic = new SyntheticMosaic(side, side);
  const file = join(work, `mosaic-${side}.tif`);
  let t = performance.now();
  if (!existsSync(file)) await writeTiledBigTiff(file, mosaic.regions());
  const truth = mosaic.count();
  console.log(`image: ${file}, ${side}², uncompressed tiled 16-bit BigTIFF of ${mib(statSync(file).size)}, ${truth} nuclei (${seconds(t)} s to write or find)`);

  const stack = await startStack({ leaseSeconds: 60 });
  const runner = stack.startRunner({}, "pipe");
  const runnerLog: string[] = [];
  runner.stdout!.on("data", (d) => runnerLog.push(String(d)));
  runner.stderr!.on("data", (d) => runnerLog.push(String(d)));
  let runnerPeak = 0;
  const sampler = setInterval(() => {
    try {
      runnerPeak = Math.max(runnerPeak, memoryOf(runner.pid!).peak);
    } catch {
      // the runner has exited
    }
  }, 2000);
  try {
    const results = join(work, "results");
    rmSync(results, { recursive: true, force: true });
    t = performance.now();
    const client = spawn(process.execPath, ["client/main.ts", "segment", file, "--out", results, "--formats", "csv,geojson,zip,masks"], {
      env: { ...process.env, CELLSEG_API: stack.api, CELLSEG_KEY: stack.key },
      stdio: ["ignore", "inherit", "inherit"],
    });
    const code = await new Promise<number | null>((resolve) => client.on("exit", resolve));
    if (code !== 0) throw new Error(`the client exited ${code}; runner log:\n${runnerLog.join("").slice(-4000)}`);
    const clientSeconds = seconds(t);
    const state = JSON.parse(readFileSync(join(results, ".cellseg-state.json"), "utf8")) as {
      images: Record<string, { image_id: string; prediction_id: string; segmentation_id: string; cell_count: number }>;
    };
    const outcome = Object.values(state.images)[0]!;
    console.log(
      `client segment (upload, prediction, exports): ${clientSeconds} s; cells ${outcome.cell_count} of ${truth} true; runner peak RSS ${mib(runnerPeak)}`,
    );

    const folder = join(results, `mosaic-${side}`);
    for (const name of readdirSync(folder)) {
      const path = join(folder, name);
      let count = "";
      if (name.endsWith(".csv")) count = `${(await countOccurrences(path, "\n")) - 1} rows`;
      if (name.endsWith(".geojson")) count = `${await countOccurrences(path, '"type":"Feature"')} features`;
      if (name.endsWith(".zip")) count = `${zipEntries(path)} ROIs`;
      console.log(`  ${name}: ${mib(statSync(path).size)} ${count}`);
    }

    // The viewer, as a person opens it: fitted (the preview alone), then zoomed to full resolution.
    const browser = await chromium.launch({ executablePath: values.chromium, args: ["--no-sandbox", "--disable-gpu"] });
    try {
      const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
      const asked = { preview: 0, outlines: 0 };
      page.on("request", (r) => {
        if (/\/preview\/\d+\/\d+\/\d+$/.test(r.url())) asked.preview++;
        if (/\/outlines\/\d+\/\d+$/.test(r.url())) asked.outlines++;
      });
      await page.goto(await stack.loginLink());
      // The link's page spends it with a button (a GET alone signs no one in).
      const signIn = page.locator("button:has-text('Sign in')");
      if (await signIn.count()) await Promise.all([page.waitForURL((url) => url.pathname === "/dashboard"), signIn.click()]);
      t = performance.now();
      await page.goto(new URL(`/dashboard/segmentations/${outcome.segmentation_id}`, stack.api.replace(/\/api\/v1$/, "")).toString());
      await page.waitForSelector("#viewer[data-loaded=true]", { timeout: 600_000 });
      const status = () => page.locator("#viewer-status").textContent();
      console.log(`viewer fitted: ${seconds(t)} s, "${await status()}", ${asked.preview} preview tiles, ${asked.outlines} outline tiles`);
      await page.screenshot({ path: join(work, "viewer-fitted.png") });
      const box = (await page.locator("#viewer-canvas").boundingBox())!;
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      t = performance.now();
      const scale = async () => Number((await page.locator("#viewer").getAttribute("data-view"))!.split(",")[0]);
      for (let turn = 0; turn < 16 && (await scale()) < 1; turn++) {
        await page.mouse.wheel(0, -800);
        await page.waitForTimeout(300);
      }
      // Polled from here: the dashboard's Content-Security-Policy forbids the page evaluating strings (waitForFunction).
      const drawnSoFar = async () => Number(await page.locator("#viewer-canvas").getAttribute("data-outlines-drawn"));
      for (const deadline = Date.now() + 600_000; (await drawnSoFar()) === 0 && Date.now() < deadline; ) await page.waitForTimeout(250);
      console.log(`viewer at full resolution: first outlines ${seconds(t)} s after the zoom, ${await drawnSoFar()} drawn`);
      // Then every tile the view asked for (the count drawn stays put for 3 s): the screenshot shows the view complete.
      for (let last = -1, steady = 0, deadline = Date.now() + 600_000; steady < 12 && Date.now() < deadline; ) {
        await page.waitForTimeout(250);
        const now = await drawnSoFar();
        steady = now === last ? steady + 1 : 0;
        last = now;
      }
      console.log(
        `viewer at full resolution, tiles all in: ${seconds(t)} s, "${await status()}", ${await drawnSoFar()} outlines drawn, ${asked.preview} preview tiles, ${asked.outlines} outline tiles asked in all`,
      );
      await page.screenshot({ path: join(work, "viewer-zoomed.png") });
    } finally {
      await browser.close();
    }
    console.log(`screenshots and results in ${work}`);
  } finally {
    clearInterval(sampler);
    await stack.stop();
  }
}

await main();
