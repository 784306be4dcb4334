// `import`, `train` and `compare` against the real local stack (wrangler dev + a CPU runner with the committed
// cpsam): a corrected label image imported for an uploaded image, refusals explained with the
// service's detail and exit status 1, and a short training on it followed to its new model, or to its failure.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encode as encodePng } from "fast-png";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalStack, startStack } from "../../scripts/local-stack.ts";
import { syntheticNuclei } from "../fixtures/nuclei-grid.ts";
import { imageKey } from "../../schema/storage-keys.ts";

let stack: LocalStack;
let runner: ChildProcess;
let work: string;
let imageId: string;

const SIZE = 256;
const SPACING = 40;
const RADIUS = 11;

/** The label image of syntheticNuclei's discs (same centres and radius): cell n has value n. */
function nucleiLabels(width: number, height: number): Uint8Array {
  const labels = new Uint16Array(width * height);
  let n = 0;
  for (let cy = SPACING / 2; cy + RADIUS < height; cy += SPACING) {
    for (let cx = SPACING / 2 + ((cy / SPACING) % 2) * 6; cx + RADIUS < width; cx += SPACING) {
      n++;
      for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) if (Math.hypot(x + 0.5 - cx, y + 0.5 - cy) <= RADIUS) labels[y * width + x] = n;
    }
  }
  return encodePng({ width, height, data: labels, depth: 16, channels: 1 });
}

beforeAll(async () => {
  stack = await startStack();
  runner = stack.startRunner();
  work = mkdtempSync(join(tmpdir(), "cellseg-client-import-"));
  const { data } = syntheticNuclei(SIZE, SIZE, SPACING, RADIUS);
  const form = new FormData();
  form.append("file", new File([encodePng({ width: SIZE, height: SIZE, data, depth: 16, channels: 1 }) as Uint8Array<ArrayBuffer>], "nuclei.png"));
  const response = await fetch(`${stack.api}/upload`, { method: "POST", body: form, headers: { Authorization: `Bearer ${stack.key}` } });
  expect(response.status).toBe(201);
  imageId = ((await response.json()) as { image: { id: string } }).image.id;
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
}, 60_000);

/** Starts `npm run client -- ...` as a user would; `output()` reads what it has written so far. */
function startClient(args: string[]): { done: Promise<{ code: number | null; output: string }>; output: () => string } {
  const child = spawn(process.execPath, ["client/main.ts", ...args], {
    env: { ...process.env, CELLSEG_API: stack.api, CELLSEG_KEY: stack.key },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  return { done: new Promise((resolve) => child.on("exit", (code) => resolve({ code, output }))), output: () => output };
}

const runClient = (args: string[]) => startClient(args).done;

async function until(check: () => boolean, timeoutMs: number): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !check(); await new Promise((r) => setTimeout(r, 100))) {
    if (Date.now() > deadline) throw new Error("timed out");
  }
}

async function api<T>(path: string): Promise<T> {
  const response = await fetch(stack.api + path, { headers: { Authorization: `Bearer ${stack.key}` } });
  expect(response.status, path).toBe(200);
  return (await response.json()) as T;
}

function file(name: string, bytes: Uint8Array | string): string {
  const path = join(work, name);
  writeFileSync(path, bytes);
  return path;
}

const cells = syntheticNuclei(SIZE, SIZE, SPACING, RADIUS).count;
let segmentationId: string;

describe("npm run client -- import", () => {
  it("imports a label image for an image and prints the segmentation id and cell count", async () => {
    const { code, output } = await runClient(["import", imageId, file("labels.png", nucleiLabels(SIZE, SIZE))]);
    expect(code, output).toBe(0);
    const match = output.match(/segmentation (\S+), (\d+) cells/);
    expect(match, output).not.toBeNull();
    segmentationId = match![1]!;
    expect(Number(match![2])).toBe(cells);
    expect(output).toContain("its intensities are being measured from the image");
    expect(await api(`/segmentation/${segmentationId}`)).toMatchObject({ image_id: imageId, cell_count: cells });
    expect(output).not.toContain(stack.key);
  }, 60_000);

  it("takes the image as --image too", async () => {
    const { code, output } = await runClient(["import", "--image", imageId, file("labels-again.png", nucleiLabels(SIZE, SIZE))]);
    expect(code, output).toBe(0);
    expect(output).toContain(`${cells} cells`);
  }, 60_000);

  it("explains a refused file with the service's detail and exits 1", async () => {
    const wrongSize = await runClient(["import", imageId, file("small.png", nucleiLabels(64, 64))]);
    expect(wrongSize.code, wrongSize.output).toBe(1);
    expect(wrongSize.output).toMatch(/Could not import small\.png for image \S+ \(422\): .*64x64.*256x256/);

    const notAnnotation = await runClient(["import", imageId, file("notes.txt", "not an annotation")]);
    expect(notAnnotation.code, notAnnotation.output).toBe(1);
    expect(notAnnotation.output).toMatch(/\(415\): /);

    const missing = await runClient(["import", "no-such-image", file("labels-3.png", nucleiLabels(SIZE, SIZE))]);
    expect(missing.code, missing.output).toBe(1);
    expect(missing.output).toContain("(404): Image with id no-such-image not found");
    expect(missing.output).not.toContain(stack.key);
  }, 60_000);

  it("refuses to run without an image and a file (exit 2), and has --help", async () => {
    expect((await runClient(["import", imageId])).code).toBe(2);
    expect((await runClient(["import", imageId, join(work, "absent.png")])).output).toContain("is not a file");
    const help = await runClient(["import", "--help"]);
    expect(help.code).toBe(0);
    expect(help.output).toContain("ROI Manager .zip");
  }, 30_000);
});

describe("npm run client -- train", () => {
  it("trains on the imported segmentation with --wait: prints the new model, its scores and whether it beat the base; exit 0 only if it did", async () => {
    const { code, output } = await runClient([
      "train",
      "--model",
      "cpsam",
      imageId,
      "--segmentations",
      segmentationId,
      "--name",
      "from-cli",
      "--steps",
      "2",
      "--wait",
      "--poll",
      "0.5",
    ]);
    // 36 nuclei in one image: two folds of its bands, each under the guard's 20, are held out in turn.
    const scored = "every object once, in 2 folds of 1 image held out in turn";
    const on = `${scored} \\(\\d+ objects\\)`;
    const beaten = new RegExp(`^Beat its base: AP@0\\.5 \\d\\.\\d{3} against \\d\\.\\d{3} on ${on}`, "m").test(output);
    // Two steps seldom gain more than noise: then it says which, and what the new model holds.
    if (!beaten)
      expect(output).toMatch(
        new RegExp(
          `^(Did not beat its base: .*\\(95% interval .*\\nNothing was learned: fine-tuning did not beat cpsam on ${scored}|Unverified: .*\\(95% interval .*\\nUnverified: model \\S+ scored above cpsam by what could be noise)`,
          "m",
        ),
      );
    expect(code, output).toBe(beaten ? 0 : 1);
    expect(output).toMatch(/Training job \S+ submitted/);
    expect(output).toMatch(/Training job \S+ COMPLETED/);
    const modelId = output.match(/New model: (\S+)/)![1]!;
    expect(output).toMatch(/base\s+AP@0\.5 (\d\.\d{3}|-)\s+AP@0\.75/);
    expect(output).toMatch(/fine-tuned\s+AP@0\.5 (\d\.\d{3}|-)\s+AP@0\.75/);
    // The training drew its split with the default seed, which the scores name.
    expect(output).toContain("Scores (on every object once, in 2 folds of 1 image held out in turn; split by seed 1):");
    // Not a terminal: plain progress lines, no cursor movement.
    expect(output).toMatch(/^training: \d+%/m);
    expect(output).not.toContain("\x1b[");
    const model = await api<{ name: string; base_model_id: string; training: { segmentation_ids: string[]; steps: number } }>(`/models/${modelId}`);
    expect(model).toMatchObject({ name: "from-cli", base_model_id: "cpsam", training: { segmentation_ids: [segmentationId], steps: 2 } });
    expect(output).not.toContain(stack.key);
  }, 300_000);

  it("without --wait prints the job id and exits 0 at once; without --model it names the base it chose and why", async () => {
    const { code, output } = await runClient(["train", imageId, "--steps", "1"]);
    expect(code, output).toBe(0);
    // The image was only imported, never segmented by the service: its modality is unknown.
    expect(output).toContain("Base model: cpsam (the default: no image's modality is known yet");
    const jobId = output.match(/Training job (\S+) submitted/)![1]!;
    expect(await api(`/job/${jobId}`)).toMatchObject({ kind: "training", image_ids: [imageId], model_id: "cpsam" });
    // The training goes on without the client; let it finish so the stack stops with no job in flight.
    let status = "";
    for (
      const deadline = Date.now() + 120_000;
      Date.now() < deadline && status !== "COMPLETED" && status !== "FAILED";
      await new Promise((r) => setTimeout(r, 500))
    ) {
      status = (await api<{ status: string }>(`/job/${jobId}`)).status;
    }
    expect(status).toBe("COMPLETED");
  }, 180_000);

  it("explains a refused training and exits 1; a bad flag exits 2", async () => {
    const missing = await runClient(["train", "--model", "cpsam", "no-such-image"]);
    expect(missing.code, missing.output).toBe(1);
    expect(missing.output).toContain("404 Image with id no-such-image not found");
    expect((await runClient(["train", "--model", "cpsam", imageId, "--steps", "1.5"])).output).toContain("--steps must be a whole number");
    expect((await runClient(["train", "--model", "cpsam"])).code).toBe(2);
  }, 60_000);

  it("with --wait reports a training that FAILED, with its reason, and exits 1", async () => {
    // No runner while the training is queued; meanwhile the image's stored bytes are damaged, as a
    // storage fault would, so the training fails on its image, as the input's fault, with the reason.
    // (A segmentation a queued training learns from can no longer be deleted: that is a 409.)
    const stopped = new Promise((resolve) => runner.once("exit", resolve));
    runner.kill("SIGTERM");
    await stopped;
    const client = startClient(["train", "--model", "cpsam", imageId, "--steps", "1", "--wait", "--poll", "0.5"]);
    await until(() => /submitted/.test(client.output()), 30_000);
    const [{ id: orgId }] = stack.sql(`SELECT id FROM organizations WHERE slug = '${stack.slug}'`) as [{ id: string }]; // the stack's organization, by its unique slug
    const damaged = join(work, "damaged.png");
    writeFileSync(damaged, new TextEncoder().encode("these bytes are no longer a PNG"));
    stack.r2Put(imageKey(orgId, imageId), damaged);
    runner = stack.startRunner();
    const { code, output } = await client.done;
    expect(code, output).toBe(1);
    expect(output).toMatch(/Training job \S+ FAILED after [^:\n]+: \S.*/);
    expect(output).not.toContain("New model");
  }, 180_000);
});

describe("npm run client -- compare", () => {
  it("segments one image with each model and scores both against the annotation imported for it", async () => {
    // An image of its own (the one above was damaged on purpose), its annotation imported first.
    const side = 240;
    const path = file("compare.png", encodePng({ width: side, height: side, data: syntheticNuclei(side, side, SPACING, RADIUS).data, depth: 16, channels: 1 }));
    const form = new FormData();
    form.append("file", new File([readFileSync(path)], "compare.png"));
    const response = await fetch(`${stack.api}/upload`, { method: "POST", body: form, headers: { Authorization: `Bearer ${stack.key}` } });
    expect(response.status).toBe(201);
    const compared = ((await response.json()) as { image: { id: string } }).image.id;
    expect((await runClient(["import", compared, file("compare-labels.png", nucleiLabels(side, side))])).code).toBe(0);

    const out = join(work, "compared");
    const { code, output } = await runClient(["compare", path, "--models", "cpsam,cpsam-large", "--out", out, "--poll", "0.5"]);
    expect(code, output).toBe(0);
    // The file is uploaded once: the second model's run finds it already there.
    expect(output).toContain(`compare.png (image ${compared})`);
    expect(output).toMatch(/^model\s+cells\s+AP@0\.5\s+AP@0\.75\s+overlay$/m);
    for (const model of ["cpsam", "cpsam-large"]) {
      const overlay = join(out, model, "compare", "compare-overlay.png");
      expect(output).toMatch(
        new RegExp(`^${model}\\s+\\d+\\s+[01]\\.\\d{3}\\s+[01]\\.\\d{3}\\s+${overlay.replaceAll("/", "\\/").replaceAll(".", "\\.")}$`, "m"),
      );
      expect(existsSync(overlay)).toBe(true);
    }
    expect(output).toContain("AP against the annotation you imported for this image");
  }, 300_000);

  it("refuses fewer than two models, or no --out (exit 2), and has --help", async () => {
    expect((await runClient(["compare", file("one.png", "x"), "--models", "cpsam", "--out", work])).code).toBe(2);
    expect((await runClient(["compare", file("two.png", "x"), "--models", "cpsam,cpsam-large"])).code).toBe(2);
    const help = await runClient(["compare", "--help"]);
    expect(help.code).toBe(0);
    expect(help.output).toContain("AP@0.5 and AP@0.75 against that annotation");
  }, 30_000);
});
