// npm start's stack end to end: real workerd, real runner processes on the CPU execution provider,
// and the admin CLI beside it.
import { type ChildProcess, execFile } from "node:child_process";
import { promisify } from "node:util";
import { type LocalStack, startStack } from "../../scripts/local-stack.ts";
import { decode as decodePng, encode as encodePng } from "fast-png";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { stackClient, syntheticNuclei } from "../fixtures/nuclei-grid.ts";
import { formatMeasurement } from "../../schema/measurements.ts";
import { encodeTiff } from "../fixtures/tiff-writer.ts";

let stack: LocalStack;

beforeAll(async () => {
  stack = await startStack();
}, 180_000);

afterAll(async () => {
  await stack?.stop();
}, 60_000);

const { api, postJson } = stackClient(() => stack);

async function upload(name: string, width: number, height: number): Promise<{ id: string; nuclei: number; data: Uint16Array }> {
  const { data, count } = syntheticNuclei(width, height);
  const id = await uploadFile(name, encodePng({ width, height, data, depth: 16, channels: 1 }));
  return { id, nuclei: count, data };
}

async function uploadFile(name: string, bytes: Uint8Array): Promise<string> {
  const form = new FormData();
  form.append("file", new File([bytes as Uint8Array<ArrayBuffer>], name));
  const { image } = await api<{ image: { id: string; upload_status: string } }>("/upload", { method: "POST", body: form });
  expect(image.upload_status).toBe("ready");
  return image.id;
}

/** The same pixels as a tiled TIFF, which any runner reads a block of at random. */
const tiledTiff = (data: Uint16Array, width: number, height: number) =>
  encodeTiff([{ width, height, samplesPerPixel: 1, values: data, kind: "uint16", tile: { width: 128, height: 128 } }]);

type Features = { geometry: unknown; properties: Record<string, unknown> }[];
/** A segmentation's cells as GeoJSON features, without their ids (which name the segmentation). */
async function exportedCells(segmentationId: string): Promise<Features> {
  const geojson = (await (
    await fetch(`${stack.api}/export/${segmentationId}/rois.geojson?columns=roi_index&columns=area_px&columns=intensity`, {
      headers: { Authorization: `Bearer ${stack.key}` },
    })
  ).json()) as { features: (Features[number] & { id?: string })[] };
  return geojson.features.map(({ geometry, properties }) => ({ geometry, properties }));
}

/**
 * The runner's intensity columns of every cell against its own pixels in the uploaded image: the
 * pixels whose centre the exported outline holds, their statistics computed here the plain way.
 */
/** A number as the exports write it (formatMeasurement: 6 significant digits, at least 4 decimals). */
const asExported = (value: number) => Number(formatMeasurement(value));

async function expectIntensities(segmentationId: string, data: Uint16Array, width: number): Promise<void> {
  const columns = ["roi_index", "intensity"].map((c) => `columns=${c}`).join("&");
  const geojson = (await (
    await fetch(`${stack.api}/export/${segmentationId}/rois.geojson?${columns}`, { headers: { Authorization: `Bearer ${stack.key}` } })
  ).json()) as { features: { geometry: { coordinates: number[][][] }; properties: Record<string, number> }[] };
  expect(geojson.features.length).toBeGreaterThan(10);
  for (const { geometry, properties } of geojson.features) {
    const ring = geometry.coordinates[0]!;
    const xs = ring.map((p) => p[0]!);
    const ys = ring.map((p) => p[1]!);
    const values: number[] = [];
    for (let y = Math.min(...ys); y < Math.max(...ys); y++)
      for (let x = Math.min(...xs); x < Math.max(...xs); x++) {
        let inside = false;
        for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
          const [xi, yi] = ring[i]!;
          const [xj, yj] = ring[j]!;
          if (yi! > y + 0.5 !== yj! > y + 0.5 && x + 0.5 < ((xj! - xi!) * (y + 0.5 - yi!)) / (yj! - yi!) + xi!) inside = !inside;
        }
        if (inside) values.push(data[y * width + x]!);
      }
    const sorted = [...values].sort((a, b) => a - b);
    const n = values.length;
    const sum = values.reduce((a, b) => a + b, 0);
    const mean = sum / n;
    const median = n % 2 ? sorted[(n - 1) / 2]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
    const std = Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / n);
    const cell = `cell ${properties.roi_index}`;
    expect(
      [properties.intensity_c0_mean, properties.intensity_c0_median, properties.intensity_c0_min, properties.intensity_c0_max, properties.intensity_c0_sum],
      cell,
    ).toEqual([mean, median, sorted[0]!, sorted[n - 1]!, sum].map(asExported));
    // Rounded to 6 significant digits (at least 4 decimals), as every exported number is.
    expect(Math.abs(properties.intensity_c0_std! - std) / std, cell).toBeLessThan(1e-5);
  }
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const finished = (p: Record<string, unknown>) => p.status === "COMPLETED" || p.status === "FAILED";

/** A dashboard session's cookie: a sign-in link is spent by the POST of its page's button, from the dashboard's own origin. */
async function dashboardCookie(): Promise<string> {
  const link = new URL(await stack.loginLink());
  const signIn = await fetch(new URL("/dashboard/login", link), {
    method: "POST",
    body: new URLSearchParams({ token: link.searchParams.get("token")! }),
    headers: { Origin: link.origin },
    redirect: "manual",
  });
  expect(signIn.status).toBe(303);
  return signIn.headers.get("set-cookie")!.split(";")[0]!;
}

/**
 * A stopping runner still answers the lease request it has open, and hands back what that brings;
 * waiting for it to exit keeps it from leasing (and releasing) the next test's job.
 */
async function stopRunner(runner: ChildProcess): Promise<void> {
  if (runner.exitCode !== null || runner.signalCode !== null) return;
  const exited = new Promise((resolve) => runner.once("exit", resolve));
  runner.kill("SIGTERM");
  await exited;
}

/** Every runner a test starts; whatever it leaves running (a failed test stops early) is stopped after it. */
const started: ChildProcess[] = [];
const startRunner = (env?: Record<string, string>, stdio?: "pipe"): ChildProcess => {
  const runner = stack.startRunner(env, stdio);
  started.push(runner);
  return runner;
};

afterEach(async () => {
  await Promise.all(started.splice(0).map(stopRunner));
}, 60_000);

describe("the local stack", () => {
  it("takes an image from upload to COMPLETED with its cells counted and exported", async () => {
    const runner = startRunner();
    const image = await upload("nuclei.png", 512, 384);
    const { prediction_id } = await postJson<{ prediction_id: string }>("/predict", { image_id: image.id, model_id: "cpsam" });
    const done = await until(() => api(`/predict/${prediction_id}`), finished, 120_000);
    expect(done).toMatchObject({ status: "COMPLETED", progress: 1 });
    // The synthetic nuclei are well separated; a working model finds nearly all of them.
    expect(done.cell_count).toBeGreaterThanOrEqual(Math.round(image.nuclei * 0.8));
    expect(done.cell_count).toBeLessThanOrEqual(Math.round(image.nuclei * 1.2));
    const csv = await (
      await fetch(`${stack.api}/export/${done.segmentation_id}/measurements.csv`, { headers: { Authorization: `Bearer ${stack.key}` } })
    ).text();
    expect(csv.trim().split("\n")).toHaveLength((done.cell_count as number) + 1);
    await expectIntensities(done.segmentation_id as string, image.data, 512);

    // Those outlines brought back as a correction (ImageJ ROIs): the runner measures the import's
    // intensities from the image too, and they are the same numbers.
    const rois = await (await fetch(`${stack.api}/export/${done.segmentation_id}/rois.zip`, { headers: { Authorization: `Bearer ${stack.key}` } })).blob();
    const form = new FormData();
    form.append("image_id", image.id);
    form.append("file", new File([rois], "RoiSet.zip"));
    const imported = await api<{ segmentation_id: string; cell_count: number }>("/segmentation", { method: "POST", body: form });
    expect(imported.cell_count).toBe(done.cell_count);
    const header = () =>
      fetch(`${stack.api}/export/${imported.segmentation_id}/measurements.csv?columns=roi_id&columns=intensity`, {
        headers: { Authorization: `Bearer ${stack.key}` },
      }).then(async (r) => (await r.text()).split("\r\n")[0]!);
    expect(await until(header, (h) => h.includes("intensity_c0_mean"), 60_000)).toBe(
      "roi_id,intensity_c0_mean,intensity_c0_median,intensity_c0_std,intensity_c0_min,intensity_c0_max,intensity_c0_sum",
    );
    await expectIntensities(imported.segmentation_id, image.data, 512);
    await stopRunner(runner);
  }, 240_000);

  it("lists the three public models with what each is for and the modalities it is recommended for, and segments with cpsam-large and cpsam-histology when a prediction names them", async () => {
    const models = await api<{ id: string; is_public: boolean; description: string; recommended_for: string[] }[]>("/models");
    const shared = models.filter((m) => m.is_public);
    // The fast default first, then in the order they were released.
    expect(shared.map((m) => [m.id, m.recommended_for])).toEqual([
      ["cpsam", ["fluorescence"]],
      ["cpsam-large", ["brightfield"]],
      ["cpsam-histology", ["histology"]],
    ]);
    // Each says what it is for, from its manifest; the figures are dated in docs/models.md.
    for (const model of shared) expect(model.description).toMatch(/^For (fluorescence|brightfield|stained histology).* docs\/models\.md\.$/);
    const runner = startRunner();
    const image = await upload("nuclei-for-the-large-model.png", 384, 320);
    const { prediction_id } = await postJson<{ prediction_id: string }>("/predict", { image_id: image.id, model_id: "cpsam-large" });
    const done = await until(() => api(`/predict/${prediction_id}`), finished, 120_000);
    expect(done).toMatchObject({ status: "COMPLETED", model_id: "cpsam-large" });
    expect(done.cell_count).toBeGreaterThanOrEqual(Math.round(image.nuclei * 0.8));
    expect(done.cell_count).toBeLessThanOrEqual(Math.round(image.nuclei * 1.2));

    // The same nuclei as purple haematoxylin on pink tissue, as 8-bit RGB: cpsam-histology's weights,
    // put where its row points as npm start puts them, segment them.
    const width = 384;
    const height = 320;
    const { data, count } = syntheticNuclei(width, height);
    const rgb = new Uint8Array(3 * width * height);
    for (let i = 0; i < width * height; i++) {
      const v = (data[i]! - 300) / 3000;
      rgb.set([230 - 150 * v, 170 - 120 * v, 205 - 60 * v].map(Math.round), 3 * i);
    }
    const stained = await uploadFile("stained-nuclei.png", encodePng({ width, height, data: rgb, depth: 8, channels: 3 }));
    const histology = await postJson<{ prediction_id: string }>("/predict", { image_id: stained, model_id: "cpsam-histology" });
    const segmented = await until(() => api(`/predict/${histology.prediction_id}`), finished, 120_000);
    expect(segmented).toMatchObject({ status: "COMPLETED", model_id: "cpsam-histology" });
    expect(segmented.cell_count).toBeGreaterThanOrEqual(Math.round(count * 0.8));
    expect(segmented.cell_count).toBeLessThanOrEqual(Math.round(count * 1.2));
    await stopRunner(runner);
  }, 240_000);

  it("segments an image above the runner's single-pass size block by block, read in parts, its cells whole and once", async () => {
    // A runner that treats 0.1 MP as large and has memory for blocks of the smallest size (256-px cores).
    const runner = startRunner({ SINGLE_PASS_MP: "0.1", BLOCK_MEMORY_MB: "4" });
    const image = await upload("mosaic.png", 768, 512);
    const { prediction_id } = await postJson<{ prediction_id: string }>("/predict", { image_id: image.id, model_id: "cpsam" });
    const done = await until(() => api(`/predict/${prediction_id}`), finished, 120_000);
    expect(done).toMatchObject({ status: "COMPLETED", progress: 1 });
    expect(done.cell_count).toBeGreaterThanOrEqual(Math.round(image.nuclei * 0.9));
    expect(done.cell_count).toBeLessThanOrEqual(Math.round(image.nuclei * 1.1));
    const geojson = (await (
      await fetch(`${stack.api}/export/${done.segmentation_id}/rois.geojson`, { headers: { Authorization: `Bearer ${stack.key}` } })
    ).json()) as { features: { properties: { area_px: number } }[] };
    expect(geojson.features).toHaveLength(done.cell_count as number);
    // Whole nuclei (radius 11: about 380 px), not halves cut at a block seam.
    const areas = geojson.features.map((f) => f.properties.area_px).sort((a, b) => a - b);
    expect(areas[0]).toBeGreaterThan(200);
    // Each cell's intensities, taken from the block that kept it, are those of its pixels in the whole image.
    await expectIntensities(done.segmentation_id as string, image.data, 768);
    // The image's first segmentation also made its preview, summed from the blocks as they were read.
    const cookie = await dashboardCookie();
    const origin = new URL(stack.api).origin;
    const preview = await (await fetch(`${origin}/dashboard/api/images/${image.id}/preview`, { headers: { cookie } })).json();
    expect(preview).toMatchObject({ status: "ready", index: { width: 768, height: 512, levels: [{ factor: 1, columns: 2, rows: 1 }] } });
    const tile = await fetch(`${origin}/dashboard/api/images/${image.id}/preview/0/1/0`, { headers: { cookie } });
    expect(tile.headers.get("content-type")).toBe("image/png");
    expect(decodePng(new Uint8Array(await tile.arrayBuffer()))).toMatchObject({ width: 256, height: 512 });
    await stopRunner(runner);
  }, 180_000);

  it("fans a tiled TIFF's blocks out over two runners, and merges them into the cells one runner makes block by block", async () => {
    // Runners that treat 0.1 MP as large, with memory for blocks of the smallest size (256-px cores):
    // 768 x 512 is 6 blocks, as for the PNG, which a runner reads in sequence and segments itself.
    const small = { SINGLE_PASS_MP: "0.1", BLOCK_MEMORY_MB: "4", RUNNER_CONCURRENCY: "1" };
    const runners = [startRunner({ ...small, RUNNER_ID: "fan-out-a" }), startRunner({ ...small, RUNNER_ID: "fan-out-b" })];
    const { data, count } = syntheticNuclei(768, 512);
    const tiffId = await uploadFile("mosaic-tiled.tif", tiledTiff(data, 768, 512));
    const pngId = await uploadFile("mosaic-same.png", encodePng({ width: 768, height: 512, data, depth: 16, channels: 1 }));

    const { prediction_id: fanned } = await postJson<{ prediction_id: string }>("/predict", { image_id: tiffId, model_id: "cpsam" });
    const seen: unknown[] = [];
    const done = await until(
      async () => {
        const p = await api(`/predict/${fanned}`);
        if (p.blocks) seen.push(p.blocks);
        return p;
      },
      finished,
      180_000,
    );
    expect(done).toMatchObject({ status: "COMPLETED", progress: 1, blocks: { total: 6, done: 6, glass: 0 } });
    expect(done.cell_count).toBeGreaterThanOrEqual(Math.round(count * 0.9));
    expect(done.cell_count).toBeLessThanOrEqual(Math.round(count * 1.1));
    // Its progress counted blocks while they ran; both runners leased some of them.
    expect(seen.some((b) => (b as { done: number }).done < 6)).toBe(true);
    const holders = stack.sql(`SELECT DISTINCT lease_holder FROM jobs WHERE parent_job_id = '${fanned}' AND status = 'COMPLETED'`);
    expect(holders.map((h) => h.lease_holder).sort()).toEqual(["fan-out-a", "fan-out-b"]);

    const { prediction_id: inTurn } = await postJson<{ prediction_id: string }>("/predict", { image_id: pngId, model_id: "cpsam" });
    const single = await until(() => api(`/predict/${inTurn}`), finished, 180_000);
    expect(single).toMatchObject({ status: "COMPLETED", blocks: null });
    // The same cells, in the same order, with the same outlines and intensities.
    const [merged, alone] = [await exportedCells(done.segmentation_id as string), await exportedCells(single.segmentation_id as string)];
    expect(merged.length).toBe(alone.length);
    expect(merged).toEqual(alone);
    await expectIntensities(done.segmentation_id as string, data, 768);
    // The blocks' parts are gone once the artifact is written.
    expect(stack.sql(`SELECT count(*) AS n FROM jobs WHERE parent_job_id = '${fanned}' AND status <> 'COMPLETED'`)[0]!.n).toBe(0);
    // The blocks also wrote the image's full-resolution level, core by core, with the stretch the
    // merge's preview uses: here (768 x 512) the preview's finest level is full resolution too, so
    // the last core's tile is that level's pixels there.
    const cookie = await dashboardCookie();
    const origin = new URL(stack.api).origin;
    type Core = { x: number; y: number; width: number; height: number };
    const preview = (await (await fetch(`${origin}/dashboard/api/images/${tiffId}/preview`, { headers: { cookie } })).json()) as { full: { blocks: Core[] } };
    expect(preview).toMatchObject({ status: "ready", index: { levels: [{ factor: 1 }] }, full: { tile: 512 } });
    const cores = preview.full.blocks;
    expect(cores).toHaveLength(6);
    const last = cores[5]!;
    const png = async (path: string) => {
      const response = await fetch(`${origin}/dashboard/api/images/${tiffId}/${path}`, { headers: { cookie } });
      expect(response.headers.get("content-type")).toBe("image/png");
      return decodePng(new Uint8Array(await response.arrayBuffer()));
    };
    const full = await png("full/5/0/0");
    expect([full.width, full.height]).toEqual([last.width, last.height]);
    const finest = await png(`preview/0/${Math.floor(last.x / 512)}/${Math.floor(last.y / 512)}`);
    const same = Array.from({ length: last.height }, (_, y) =>
      Array.from({ length: last.width }, (_, x) => finest.data[((last.y % 512) + y) * finest.width + (last.x % 512) + x]),
    ).flat();
    expect(Array.from(full.data)).toEqual(same);
    expect(full.data.some((v) => v > 0) && full.data.some((v) => v < 255)).toBe(true);
    await Promise.all(runners.map(stopRunner));
  }, 420_000);

  it("redoes only the blocks a runner killed mid-slide held while another runner works on, and skips the network on glass", async () => {
    const small = { SINGLE_PASS_MP: "0.1", BLOCK_MEMORY_MB: "4", RUNNER_CONCURRENCY: "1", LEASE_SECONDS: "10" };
    const { data } = syntheticNuclei(768, 512);
    const imageId = await uploadFile("killed-mid-slide.tif", tiledTiff(data, 768, 512));
    // The doomed runner's log (stderr) says when it leases a block; it is killed at that line, long before
    // the block (hundreds of ms of reading and network) could be done.
    const doomed = startRunner({ ...small, RUNNER_ID: "killed-runner" }, "pipe");
    doomed.stdout!.pipe(process.stdout);
    const leased = new Promise<number>((resolve) => {
      let log = "";
      doomed.stderr!.on("data", (chunk: Buffer) => {
        process.stderr.write(chunk);
        log += chunk.toString();
        const line = /\[runner\] block (\d+) of \d+ of prediction \S+ leased/.exec(log);
        if (line && doomed.kill("SIGKILL")) resolve(Number(line[1]) - 1);
      });
    });
    const steady = startRunner({ ...small, RUNNER_ID: "steady-runner" });
    const { prediction_id } = await postJson<{ prediction_id: string }>("/predict", { image_id: imageId, model_id: "cpsam" });
    const lost = await Promise.race([
      leased,
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error("the doomed runner leased no block within 120 s")), 120_000)),
    ]);
    await new Promise((resolve) => (doomed.exitCode !== null || doomed.signalCode !== null ? resolve(null) : doomed.once("exit", resolve)));
    const done = await until(() => api(`/predict/${prediction_id}`), finished, 240_000);
    expect(done).toMatchObject({ status: "COMPLETED", blocks: { total: 6, done: 6 } });
    // The block it held ran twice, the second time by the other runner; every other block ran once.
    const attempts = stack.sql(`SELECT block_index, attempts, lease_holder FROM jobs WHERE parent_job_id = '${prediction_id}' ORDER BY block_index`);
    expect(attempts).toHaveLength(6);
    expect(attempts.filter((b) => b.attempts === 2).map((b) => b.block_index)).toEqual([lost]);
    expect(attempts.every((b) => (b.attempts as number) <= 2)).toBe(true);
    expect(attempts.filter((b) => b.attempts === 2).every((b) => b.lease_holder === "steady-runner")).toBe(true);

    // A slide of nothing but glass: every block is found empty and none runs the network.
    const glass = await uploadFile("glass.tif", tiledTiff(new Uint16Array(1024 * 1024), 1024, 1024));
    const empty = await postJson<{ prediction_id: string }>("/predict", { image_id: glass, model_id: "cpsam", params: { diameter: 30 } });
    const blank = await until(() => api(`/predict/${empty.prediction_id}`), finished, 120_000);
    expect(blank).toMatchObject({ status: "COMPLETED", cell_count: 0 });
    expect((blank.blocks as { glass: number; total: number }).glass).toBe((blank.blocks as { total: number }).total);
    await stopRunner(steady);
  }, 420_000);

  it("grows each nucleus into a cell without overlaps, and measures the cytoplasm's own pixels, in one pass and block by block", async () => {
    const image = await upload("cells.png", 512, 384);
    // Nuclei 22 px across, 40 px apart: grown by 12 px, neighbours compete for the pixels between them.
    const grown = async (runnerEnv: Record<string, string>) => {
      const runner = startRunner(runnerEnv);
      const { prediction_id } = await postJson<{ prediction_id: string }>("/predict", {
        image_id: image.id,
        model_id: "cpsam",
        params: { cell_expansion_px: 12 },
      });
      const done = await until(() => api(`/predict/${prediction_id}`), finished, 120_000);
      expect(done).toMatchObject({ status: "COMPLETED" });
      await stopRunner(runner);
      const query = ["roi_index", "area_px", "cell"].map((c) => `columns=${c}`).join("&");
      const geojson = (await (
        await fetch(`${stack.api}/export/${done.segmentation_id}/rois.geojson?objects=cell&${query}`, { headers: { Authorization: `Bearer ${stack.key}` } })
      ).json()) as {
        features: { geometry: { coordinates: number[][][] }; nucleusGeometry: { coordinates: number[][][] }; properties: Record<string, number> }[];
      };
      expect(geojson.features).toHaveLength(done.cell_count as number);
      expect(geojson.features.length).toBeGreaterThanOrEqual(Math.round(image.nuclei * 0.8));
      return geojson.features;
    };
    const inside = (ring: number[][], x: number, y: number) => {
      let odd = false;
      for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
        const [xi, yi] = ring[i]!;
        const [xj, yj] = ring[j]!;
        if (yi! > y !== yj! > y && x < ((xj! - xi!) * (y - yi!)) / (yj! - yi!) + xi!) odd = !odd;
      }
      return odd;
    };
    const expectCells = (features: Awaited<ReturnType<typeof grown>>) => {
      const owner = new Int32Array(512 * 384).fill(-1);
      let competed = 0;
      for (const { geometry, nucleusGeometry, properties } of features) {
        const cell = geometry.coordinates[0]!;
        const nucleus = nucleusGeometry.coordinates[0]!;
        const cytoplasm: number[] = [];
        let area = 0;
        const box = (ring: number[][]) => [0, 1].map((a) => [Math.min(...ring.map((p) => p[a]!)), Math.max(...ring.map((p) => p[a]!))]);
        const [[x0, x1], [y0, y1]] = box(cell) as [[number, number], [number, number]];
        const [[nx0, nx1], [ny0, ny1]] = box(nucleus) as [[number, number], [number, number]];
        expect(nx0 >= x0 && nx1 <= x1 && ny0 >= y0 && ny1 <= y1, "the nucleus's box inside its cell's").toBe(true);
        for (let y = y0; y < y1; y++)
          for (let x = x0; x < x1; x++) {
            if (!inside(cell, x + 0.5, y + 0.5)) {
              expect(inside(nucleus, x + 0.5, y + 0.5), "the nucleus lies inside its cell").toBe(false);
              continue;
            }
            expect(owner[y * 512 + x], `pixel ${x},${y} in two cells`).toBe(-1);
            owner[y * 512 + x] = properties.roi_index!;
            area++;
            if (!inside(nucleus, x + 0.5, y + 0.5)) cytoplasm.push(image.data[y * 512 + x]!);
          }
        expect([area, cytoplasm.length]).toEqual([properties.cell_area_px, properties.cytoplasm_area_px]);
        // Grown 12 px all round, a lone cell would be far larger: most lost pixels to a neighbour.
        if (properties.cell_area_px! < Math.PI * (11 + 12) ** 2 * 0.9) competed++;
        const sum = cytoplasm.reduce((a, b) => a + b, 0);
        const sorted = [...cytoplasm].sort((a, b) => a - b);
        expect([properties.cytoplasm_c0_mean, properties.cytoplasm_c0_min, properties.cytoplasm_c0_max, properties.cytoplasm_c0_sum]).toEqual(
          [sum / cytoplasm.length, sorted[0]!, sorted.at(-1)!, sum].map(asExported),
        );
      }
      expect(competed).toBeGreaterThan(features.length / 2);
    };
    expectCells(await grown({}));
    // Above the single-pass size, by a runner that reads it in blocks of 256-px cores, so that
    // seams run through it: the cells are as whole and as measured (test/engine/cell-expansion.test.ts
    // checks them against the one-pass cells).
    expectCells(await grown({ SINGLE_PASS_MP: "0.1", BLOCK_MEMORY_MB: "4" }));
  }, 300_000);

  it("fails a prediction whose channels the image lacks at once, with the reason", async () => {
    const runner = startRunner();
    const image = await upload("gray.png", 128, 128);
    const { prediction_id } = await postJson<{ prediction_id: string }>("/predict", { image_id: image.id, model_id: "cpsam", params: { channels: [3, 0] } });
    const done = await until(() => api(`/predict/${prediction_id}`), finished, 120_000);
    expect(done).toMatchObject({ status: "FAILED", attempts: 1, reason: "params.channels asks for channel 3; the image has 1" });
    await stopRunner(runner);
  }, 180_000);

  it("trains a model on a segmented image, lists it, and predicts with it", async () => {
    const runner = startRunner();
    const image = await upload("train.png", 256, 256);
    const { prediction_id } = await postJson<{ prediction_id: string }>("/predict", { image_id: image.id, model_id: "cpsam" });
    expect(await until(() => api(`/predict/${prediction_id}`), finished, 120_000)).toMatchObject({ status: "COMPLETED" });

    const training = await postJson<{ job_id: string }>("/job/training", { model_id: "cpsam", image_ids: [image.id], steps: 2, name: "my-nuclei" });
    const trained = await until(() => api(`/job/${training.job_id}`), finished, 240_000);
    expect(trained).toMatchObject({ status: "COMPLETED", kind: "training" });
    const models = await api<{ id: string; name: string; is_public: boolean; base_model_id: string }[]>("/models");
    const mine = models.find((m) => m.id === trained.result_model_id);
    expect(mine).toMatchObject({ name: "my-nuclei", is_public: false, base_model_id: "cpsam" });

    const again = await postJson<{ prediction_id: string }>("/predict", { image_id: image.id, model_id: mine!.id });
    expect(await until(() => api(`/predict/${again.prediction_id}`), finished, 120_000)).toMatchObject({ status: "COMPLETED", model_id: mine!.id });
    await stopRunner(runner);
  }, 420_000);

  it("a runner killed mid-job loses nothing: the next lease completes the job, once", async () => {
    const doomed = startRunner({ RUNNER_ID: "doomed" });
    const image = await upload("big.png", 2048, 2048);
    const { prediction_id } = await postJson<{ prediction_id: string }>("/predict", { image_id: image.id, model_id: "cpsam" });
    // A runner of an earlier test, stopping, may lease it first and hand it back: wait for the doomed one to hold it.
    // Which runner holds a job is in the jobs table only (no API shows runners to users): read it
    // there, with the status and attempts of the same moment.
    const held = await until(
      async () => stack.sql(`SELECT status, attempts, lease_holder FROM jobs WHERE id = '${prediction_id}'`)[0] ?? {},
      (p) => p.lease_holder === "doomed" || p.status === "COMPLETED" || p.status === "FAILED",
      60_000,
    );
    expect(held).toMatchObject({ status: "STARTED", lease_holder: "doomed", attempts: 1 });
    doomed.kill("SIGKILL");

    startRunner();
    const done = await until(() => api(`/predict/${prediction_id}`), finished, 180_000);
    expect(done).toMatchObject({ status: "COMPLETED", attempts: 2 });
    const [{ n }] = stack.sql(`SELECT count(*) AS n FROM segmentations WHERE job_id = '${prediction_id}'`) as [{ n: number }];
    expect(n).toBe(1);
  }, 300_000);
});

// `npm run admin` beside a running stack that serves readers: every command succeeds and no
// request turns into a 500 (the CLI goes through the worker's operator API, so the worker stays
// the only process that opens the local SQLite file).
const runFile = promisify(execFile);
const READERS = 10;
const COMMANDS = 10;

const admin = (...args: string[]) => runFile(process.execPath, ["scripts/admin.ts", ...args, "--persist-to", stack.state], { timeout: 60_000 });

describe("the admin CLI while the local stack serves load", () => {
  it(`creates ${COMMANDS} keys while ${READERS} clients read, every one working, with no 5xx`, async () => {
    const statuses = new Map<number, number>();
    let reading = true;
    const reader = async () => {
      for (let i = 0; reading; i++) {
        const path = i % 2 ? "/images" : "/models";
        const response = await fetch(stack.api + path, { headers: { Authorization: `Bearer ${stack.key}` } });
        await response.arrayBuffer();
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      }
    };
    const readers = Array.from({ length: READERS }, reader);

    const keys: string[] = [];
    try {
      for (let i = 0; i < COMMANDS; i++) {
        const { stdout } = await admin("key", "create", "e2e");
        keys.push(stdout.trim().split("\n").at(-1)!);
      }
    } finally {
      reading = false;
      await Promise.all(readers);
    }

    expect(keys).toHaveLength(COMMANDS);
    for (const key of keys) {
      expect(key).toMatch(/^csk_[0-9a-f]{64}$/);
      expect((await fetch(`${stack.api}/images`, { headers: { Authorization: `Bearer ${key}` } })).status).toBe(200);
    }
    const listed = await admin("key", "list", "e2e");
    expect(listed.stdout.trim().split("\n")).toHaveLength(COMMANDS + 1);
    expect([...statuses.keys()]).toEqual([200]);
    expect(statuses.get(200)).toBeGreaterThan(COMMANDS);
  }, 240_000);
});
