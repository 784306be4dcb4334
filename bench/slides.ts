// npm run bench:slides [-- --dir DIR] [--out DIR]
// Whole slides as scanners wrote them, through the whole service as a user sends them: every file
// in DIR (default ../shared/data/slides) uploaded and segmented with `npm run client -- segment`
// and the defaults, on the local stack with one CPU runner. Prints, per file: the format and level
// the image record names, the pixel size and where it came from, the diameter and why
// (`diameter_basis`), the cells, seconds per megapixel of the prediction, and the runner's peak RSS.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startStack } from "../scripts/local-stack.ts";

const { values } = parseArgs({
  options: {
    dir: { type: "string", default: join(import.meta.dirname, "../../shared/data/slides") },
    out: { type: "string", default: join(tmpdir(), "cellseg-bench-slides") },
  },
});
const SLIDE = /\.(svs|tiff?|ndpi|dcm|zip)$/i;
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;

/** The runner's peak resident memory from /proc (Linux); it only grows, so it is read after each file. */
function peakOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
}

async function main() {
  const files = readdirSync(values.dir)
    .filter((name) => SLIDE.test(name))
    .sort();
  if (files.length === 0) throw new Error(`no slide files in ${values.dir}`);
  const stack = await startStack({ leaseSeconds: 60 });
  const runner = stack.startRunner({}, "pipe");
  const runnerLog: string[] = [];
  runner.stdout!.on("data", (d) => runnerLog.push(String(d)));
  runner.stderr!.on("data", (d) => runnerLog.push(String(d)));
  const get = async <T>(path: string): Promise<T> => {
    const response = await fetch(`${stack.api}${path}`, { headers: { Authorization: `Bearer ${stack.key}` } });
    if (!response.ok) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  };
  try {
    for (const name of files) {
      const path = join(values.dir, name);
      const results = join(values.out, name);
      rmSync(results, { recursive: true, force: true });
      const started = performance.now();
      const client = spawn(process.execPath, ["client/main.ts", "segment", path, "--out", results, "--formats", "csv"], {
        env: { ...process.env, CELLSEG_API: stack.api, CELLSEG_KEY: stack.key },
        stdio: ["ignore", "ignore", "pipe"],
      });
      let clientErrors = "";
      client.stderr.on("data", (d) => {
        clientErrors += String(d);
      });
      const code = await new Promise<number | null>((resolve) => client.on("exit", resolve));
      const seconds = (performance.now() - started) / 1000;
      if (code !== 0) {
        console.log(`${name}: the client exited ${code}: ${clientErrors.trim().split("\n").at(-1)}`);
        continue;
      }
      const state = JSON.parse(readFileSync(join(results, ".cellseg-state.json"), "utf8")) as {
        images: Record<string, { image_id: string; prediction_id: string; segmentation_id: string; cell_count: number }>;
      };
      const outcome = Object.values(state.images)[0]!;
      type Image = { format: string; width: number; height: number; planes: number; pixel_size: { x_um: number; source: string } | null };
      type Segmentation = { diameter: number; diameter_basis: { source: string; reason: string } | null; timings: Record<string, number> | null };
      const image = await get<Image>(`/upload/${outcome.image_id}`);
      const segmentation = await get<Segmentation>(`/segmentation/${outcome.segmentation_id}`);
      const megapixels = (image.width * image.height) / 1e6;
      // A slide segmented block by block (fanned out to block tasks) has its stages summed over the
      // blocks, and its total_ms is the merge's own: the compute is the sum of the stages.
      const timings = segmentation.timings ?? {};
      const blocks = timings.blocks;
      const predictionMs =
        blocks === undefined
          ? Number(timings.total_ms ?? Number.NaN)
          : Object.entries(timings).reduce((sum, [key, ms]) => (key.endsWith("_ms") && key !== "total_ms" ? sum + ms : sum), 0);
      console.log(
        [
          `${name} (${mib(statSync(path).size)}): ${image.format}, level 0 ${image.width}x${image.height}, ${image.planes} plane(s)`,
          `  pixel size: ${image.pixel_size ? `${image.pixel_size.x_um} µm (${image.pixel_size.source})` : "none"}`,
          `  diameter ${segmentation.diameter.toFixed(1)} px: ${segmentation.diameter_basis?.reason ?? "?"}`,
          `  cells ${outcome.cell_count}; prediction ${(predictionMs / 1000).toFixed(1)} s${blocks === undefined ? " in one pass" : ` summed over ${blocks} blocks`}, ${(predictionMs / 1000 / megapixels).toFixed(2)} s/MP; client end to end ${seconds.toFixed(1)} s; runner peak RSS so far ${mib(peakOf(runner.pid!))}`,
        ].join("\n"),
      );
    }
  } finally {
    await stack.stop();
  }
}

await main();
