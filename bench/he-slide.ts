// npm run bench:he-slide -- --data DIR [--side 32768] [--tissue 0.35] [--seed 1] [--model <onnx>|<name>]
//   [--reference <onnx>|<name>] [--provider cpu|webgpu|cuda|auto] [--memory-mb N] [--work DIR] [--clean]
// Issue #33 item 5, its second half: does a whole slide of H&E go through the block-wise path with
// the histology model within 1.5 GB? The slide is made of real H&E: the crops in DIR/images/ (TNBC,
// <nuclei>/tnbc: 512² RGB PNGs at 40x), tiled over a few irregular islands of tissue
// covering --tissue of a --side² slide, on white-ish glass with the noise of a scanner's camera. It
// is rendered a rectangle at a time, never held whole, and written as an uncompressed tiled 8-bit
// RGB BigTIFF (bench/tiled-bigtiff-file.ts; 3 GiB at 32768², cached under $TMPDIR by its parameters,
// removed with --clean). Each model then segments it with the CLI a user runs (`node
// gpu-runner/cli/segment.ts <tiff> --model M --provider P --out <temp>`), in a fresh process.
// Prints, per model: the process's peak RSS (its VmHWM, read by the process as it exits) and that
// reached by half of the blocks (polled: a peak that still grows in the second half grows with the
// slide), seconds from spawn to exit (opening, model load, survey, blocks, writing every output),
// s/MP over the whole slide, blocks and glass blocks, cells, and the modality and diameter the
// survey decided. With --reference, the ratio of s/MP to the reference's, both measured in this run
// (the shared machine's speed drifts between runs). Target: peak RSS <= 1.5 GB (1.5e9 bytes) with
// the histology model (default: the public cpsam-histology).
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { type DecodedImage, decodeImage } from "../common/decode/index.ts";
import type { RegionSource } from "../gpu-runner/engine/blocks/region-source.ts";
import { SINGLE_PASS_PIXELS } from "../gpu-runner/engine/blocks/segment-blocks.ts";
import { mix32 } from "../test/fixtures/mosaic.ts";
import { writeTiledBigTiff } from "./tiled-bigtiff-file.ts";

const SEGMENT_CLI = fileURLToPath(new URL("../gpu-runner/cli/segment.ts", import.meta.url));
const TARGET_BYTES = 1.5e9;

const { values } = parseArgs({
  options: {
    data: { type: "string" },
    side: { type: "string", default: "32768" },
    tissue: { type: "string", default: "0.35" },
    seed: { type: "string", default: "1" },
    model: { type: "string" },
    reference: { type: "string" },
    provider: { type: "string", default: "cpu" },
    "memory-mb": { type: "string" },
    work: { type: "string" },
    clean: { type: "boolean", default: false },
  },
});

const unit = (x: number, y: number, salt: number) => mix32(x, y, salt) / 4294967296;

/** Glass as a scanner sees it: bright, slightly tinted, never quite colourless or flat. */
const GLASS = [235, 230, 235];
/** Width (px) over which tissue fades into glass: a real section thins out at its edge rather than stopping on a line. */
const FEATHER = 24;
/** Steps of the islands' outline, looked up by angle. */
const OUTLINE_STEPS = 1024;

interface Island {
  cx: number;
  cy: number;
  /** Semi-axes before the slide's scale is applied: the calibration scales every island alike. */
  a: number;
  b: number;
  cos: number;
  sin: number;
  /** Radius factor by angle: the ellipse's outline bent by a few low harmonics. */
  outline: Float32Array;
  reach: number;
}

/** The crops as 8-bit planar RGB, cut to one square side (the smallest crop's) so any crop fills any tile. */
interface Crops {
  side: number;
  planes: Uint8Array[];
  names: string[];
}

function loadCrops(dir: string): Crops {
  const folder = join(dir, "images");
  const names = readdirSync(folder)
    .filter((n) => /\.(png|tif|tiff|jpe?g)$/i.test(n))
    .sort();
  if (names.length === 0) throw new Error(`no images in ${folder}`);
  const images: DecodedImage[] = [];
  for (const name of names) {
    const image = decodeImage(new Uint8Array(readFileSync(join(folder, name))));
    if (image.channels < 3 || image.bitDepth !== 8) throw new Error(`${name}: not 8-bit RGB (${image.channels} channels, ${image.bitDepth} bits)`);
    images.push(image);
  }
  const side = Math.min(...images.map((i) => Math.min(i.width, i.height)));
  const planes = images.map((image) => {
    const plane = new Uint8Array(3 * side * side);
    for (let c = 0; c < 3; c++)
      for (let y = 0; y < side; y++) for (let x = 0; x < side; x++) plane[(c * side + y) * side + x] = image.data[(c * image.height + y) * image.width + x]!;
    return plane;
  });
  return { side, planes, names };
}

class HeSlide {
  readonly side: number;
  readonly islands: Island[];
  /** Scale of every island's semi-axes, set so the tissue covers the fraction asked for. */
  readonly scale: number;
  readonly tissue: number;
  private readonly crops: Crops;
  private readonly seed: number;

  constructor(side: number, tissue: number, crops: Crops, seed: number) {
    this.side = side;
    this.crops = crops;
    this.seed = seed;
    const count = 4 + Math.floor(3 * unit(seed, 0, 1));
    this.islands = Array.from({ length: count }, (_, i) => {
      const r = (salt: number) => unit(seed, i, salt + 10);
      const angle = Math.PI * r(0);
      const a = side * (0.6 + 0.4 * r(1));
      const outline = new Float32Array(OUTLINE_STEPS);
      const harmonics = [2, 3, 5, 7].map((k, j) => ({ k, amplitude: (0.22 / k) * (0.5 + r(2 + j)), phase: 2 * Math.PI * r(6 + j) }));
      for (let s = 0; s < OUTLINE_STEPS; s++) {
        const theta = (2 * Math.PI * s) / OUTLINE_STEPS - Math.PI;
        outline[s] = 1 + harmonics.reduce((sum, h) => sum + h.amplitude * Math.sin(h.k * theta + h.phase), 0);
      }
      return {
        cx: side * (0.14 + 0.72 * r(10)),
        cy: side * (0.14 + 0.72 * r(11)),
        a,
        b: a * (0.5 + 0.5 * r(12)),
        cos: Math.cos(angle),
        sin: Math.sin(angle),
        outline,
        reach: Math.max(...outline),
      };
    });
    this.scale = this.calibrate(tissue);
    this.tissue = this.coverage(this.scale, 512);
  }

  /** Where (x, y) lies against an island scaled by `scale`: below 1 inside, 1 on its outline. */
  private rho(island: Island, scale: number, x: number, y: number): number {
    const dx = x - island.cx,
      dy = y - island.cy;
    const u = (dx * island.cos + dy * island.sin) / (island.a * scale);
    const v = (-dx * island.sin + dy * island.cos) / (island.b * scale);
    const step = Math.min(OUTLINE_STEPS - 1, Math.floor(((Math.atan2(v, u) + Math.PI) / (2 * Math.PI)) * OUTLINE_STEPS));
    return Math.sqrt(u * u + v * v) / island.outline[step]!;
  }

  /**
   * The columns of row `y` that may lie in an island: those inside the ellipse its outline never
   * leaves (semi-axes times the outline's reach), so the outline's angle is looked up only there.
   */
  private span(island: Island, y: number): [number, number] | undefined {
    const A = island.a * this.scale * island.reach,
      B = island.b * this.scale * island.reach;
    const { cos, sin } = island;
    const dy = y - island.cy;
    // u² + v² <= 1 for u = (dx cos + dy sin) / A, v = (dy cos - dx sin) / B: a quadratic in dx.
    const qa = (cos * cos) / (A * A) + (sin * sin) / (B * B);
    const qb = 2 * dy * cos * sin * (1 / (A * A) - 1 / (B * B));
    const qc = dy * dy * ((sin * sin) / (A * A) + (cos * cos) / (B * B)) - 1;
    const discriminant = qb * qb - 4 * qa * qc;
    if (discriminant <= 0) return undefined;
    const root = Math.sqrt(discriminant);
    return [island.cx + (-qb - root) / (2 * qa), island.cx + (-qb + root) / (2 * qa)];
  }

  /** Share of a grid of points over the slide inside some island. */
  private coverage(scale: number, grid: number): number {
    let inside = 0;
    for (let gy = 0; gy < grid; gy++)
      for (let gx = 0; gx < grid; gx++) {
        const x = ((gx + 0.5) * this.side) / grid,
          y = ((gy + 0.5) * this.side) / grid;
        if (this.islands.some((island) => this.rho(island, scale, x, y) < 1)) inside++;
      }
    return inside / (grid * grid);
  }

  /** The scale whose tissue covers `tissue` of the slide (islands overlap and leave it, so it is measured, not computed). */
  private calibrate(tissue: number): number {
    if (!(tissue > 0 && tissue < 1)) throw new Error(`--tissue must be a fraction between 0 and 1, got ${tissue}`);
    let low = 0,
      high = 2;
    for (let i = 0; i < 24; i++) {
      const mid = (low + high) / 2;
      if (this.coverage(mid, 128) < tissue) low = mid;
      else high = mid;
    }
    return (low + high) / 2;
  }

  render(x0: number, y0: number, w: number, h: number): DecodedImage {
    const { side: pitch, planes } = this.crops;
    const plane = w * h;
    const data = new Float32Array(3 * plane);
    const alpha = new Float32Array(w);
    for (let y = y0; y < y0 + h; y++) {
      alpha.fill(0);
      for (const island of this.islands) {
        const span = this.span(island, y + 0.5);
        if (!span) continue;
        const edge = island.b * this.scale;
        for (let x = Math.max(x0, Math.floor(span[0])); x < Math.min(x0 + w, Math.ceil(span[1])); x++) {
          const rho = this.rho(island, this.scale, x + 0.5, y + 0.5);
          if (rho >= 1) continue;
          const a = Math.min(1, ((1 - rho) * edge) / FEATHER);
          if (a > alpha[x - x0]!) alpha[x - x0] = a;
        }
      }
      const ty = Math.floor(y / pitch);
      // Tiles come in mirrored pairs along both axes, one crop to each 2x2 group: within a group the
      // seams reflect the tissue rather than cut it; the group's own flips vary the crops' orientation.
      const row = y - ty * pitch;
      const out = (y - y0) * w;
      for (let x = x0; x < x0 + w; ) {
        const tx = Math.floor(x / pitch);
        const end = Math.min(x0 + w, (tx + 1) * pitch);
        const group = mix32(tx >> 1, ty >> 1, this.seed);
        const crop = planes[group % planes.length]!;
        const flipX = (tx & 1) ^ ((group >>> 16) & 1);
        const flipY = (ty & 1) ^ ((group >>> 17) & 1);
        const cropRow = flipY ? pitch - 1 - row : row;
        for (; x < end; x++) {
          const i = out + x - x0;
          const glassNoise = mix32(x, y, this.seed + 1);
          const a = alpha[x - x0]!;
          const col = x - tx * pitch;
          const cropCol = flipX ? pitch - 1 - col : col;
          for (let c = 0; c < 3; c++) {
            // Camera noise of about +-3 levels per channel on the glass.
            const glass = GLASS[c]! + ((glassNoise >>> (8 * c)) & 7) - 3.5;
            const stain = a > 0 ? crop[(c * pitch + cropRow) * pitch + cropCol]! : 0;
            data[c * plane + i] = a * stain + (1 - a) * glass;
          }
        }
      }
    }
    return { width: w, height: h, channels: 3, bitDepth: 8, sampleFormat: "uint", data };
  }

  regions(): RegionSource {
    return { width: this.side, height: this.side, channels: 3, readRegion: async (x, y, w, h) => this.render(x, y, w, h) };
  }
}

interface Run {
  model: string;
  modelName: string;
  peakBytes: number;
  halfPeakBytes: number;
  seconds: number;
  blocks: number;
  glassBlocks: number;
  cells: number;
  modality: string;
  diameter: string;
}

const statusKiB = (status: string, field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN);

/**
 * Read by the CLI's process itself as it exits: VmHWM is the peak of its own address space, where a
 * poll from outside misses the last moments and getrusage's maxRSS carries the forking parent's
 * resident set across exec.
 */
const PEAK_HOOK = `data:text/javascript,${encodeURIComponent(
  'import{readFileSync,writeSync}from"node:fs";process.on("exit",()=>{const m=/VmHWM:\\s+(\\d+) kB/.exec(readFileSync("/proc/self/status","utf8"));writeSync(2,"he-slide peak "+(m?m[1]:"?")+" kB\\n")});',
)}`;

async function segment(file: string, model: string): Promise<Run> {
  const out = mkdtempSync(join(tmpdir(), "he-slide-out-"));
  const args = ["--import", PEAK_HOOK, SEGMENT_CLI, file, "--model", model, "--provider", values.provider, "--out", out];
  if (values["memory-mb"]) args.push("--memory-mb", values["memory-mb"]);
  const started = performance.now();
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "",
    stderr = "",
    lastPeak = 0,
    halfPeak = Number.NaN;
  const poll = setInterval(() => {
    try {
      lastPeak = statusKiB(readFileSync(`/proc/${child.pid}/status`, "utf8"), "VmHWM") * 1024;
    } catch {
      // gone between the poll and the read: the exit hook has the peak.
    }
  }, 500);
  child.stdout.on("data", (chunk: Buffer) => {
    const text = String(chunk);
    stdout += text;
    for (const line of text.split("\n")) {
      const block = /^block (\d+)\/(\d+)/.exec(line);
      if (!block) continue;
      process.stderr.write(
        `  ${basename(model)}: ${line}, ${(lastPeak / 2 ** 20).toFixed(0)} MiB peak so far, ${((performance.now() - started) / 1000).toFixed(0)} s\n`,
      );
      if (Number.isNaN(halfPeak) && 2 * Number(block[1]) >= Number(block[2])) halfPeak = lastPeak;
    }
  });
  child.stderr.on("data", (chunk: Buffer) => void (stderr += String(chunk)));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  clearInterval(poll);
  const seconds = (performance.now() - started) / 1000;
  rmSync(out, { recursive: true, force: true });
  const peak = /he-slide peak (\d+) kB/.exec(stderr);
  const summary = /: \d+x\d+x\d+, (\d+) cells, confluency [\d.]+% \(block by block: (\d+) blocks, (\d+) of them glass\)/.exec(stdout);
  if (code !== 0 || !peak || !summary) throw new Error(`segment with ${model} failed (exit ${code}):\n${stdout.slice(-2000)}\n${stderr.slice(-2000)}`);
  const decided = /^(?:modality (\S+) \((.*)\), )?diameter ([\d.]+) px$/m.exec(stdout);
  return {
    model,
    modelName: /^model (\S+) on /m.exec(stdout)?.[1] ?? model,
    peakBytes: Number(peak[1]) * 1024,
    halfPeakBytes: halfPeak,
    seconds,
    blocks: Number(summary[2]),
    glassBlocks: Number(summary[3]),
    cells: Number(summary[1]),
    modality: decided?.[1] ? `${decided[1]} (${decided[2]})` : "-",
    diameter: decided?.[3] ?? "-",
  };
}

async function slideFile(slide: HeSlide, crops: Crops, seed: number): Promise<string> {
  const work = values.work ?? join(tmpdir(), "cellseg-bench-he-slide");
  mkdirSync(work, { recursive: true });
  // The crops' names and sizes and the layout's parameters name the file: any change makes a new one.
  const data = createHash("sha256");
  for (const name of crops.names) data.update(`${name}:${statSync(join(values.data!, "images", name)).size};`);
  const key = data.update(`v1;${slide.side};${values.tissue};${seed}`).digest("hex").slice(0, 12);
  const file = join(work, `he-slide-${slide.side}-${key}.tif`);
  const started = performance.now();
  if (existsSync(file)) {
    console.log(`slide ${file}: cached, ${(statSync(file).size / 2 ** 30).toFixed(2)} GiB`);
    return file;
  }
  // Written under another name and renamed when whole, so an interrupted write is never taken for the slide.
  const partial = `${file}.partial`;
  const bytes = await writeTiledBigTiff(partial, slide.regions(), { kind: "uint8" });
  renameSync(partial, file);
  console.log(`slide ${file}: written in ${((performance.now() - started) / 1000).toFixed(0)} s, ${(bytes / 2 ** 30).toFixed(2)} GiB`);
  return file;
}

const mib = (bytes: number) => (Number.isNaN(bytes) ? "-" : `${(bytes / 2 ** 20).toFixed(0)} MiB`);

async function main(): Promise<void> {
  if (!values.data) throw new Error("--data DIR is required: a folder whose images/ hold H&E crops (e.g. <nuclei>/tnbc, TNBC's crops)");
  const side = Number(values.side);
  const seed = Number(values.seed);
  // The CLI segments an image of at most the single-pass size whole: no blocks to measure.
  if (!(Number.isInteger(side) && side * side > SINGLE_PASS_PIXELS))
    throw new Error(
      `--side must be an integer above ${Math.floor(Math.sqrt(SINGLE_PASS_PIXELS))} (the CLI segments smaller images in one pass), got ${values.side}`,
    );
  const crops = loadCrops(values.data);
  const slide = new HeSlide(side, Number(values.tissue), crops, seed);
  const model = values.model ?? "cpsam-histology";
  const megapixels = (side * side) / 1e6;
  console.log(
    `bench:he-slide: ${side}² (${megapixels.toFixed(0)} MP, ${((3 * side * side) / 1e9).toFixed(2)} GB as raw RGB), ${slide.islands.length} islands of tissue over ${(100 * slide.tissue).toFixed(1)} % of it, ` +
      `${crops.planes.length} crops of ${crops.side}² from ${values.data}; provider ${values.provider}, block memory ${values["memory-mb"] ?? "default"} MB`,
  );
  const file = await slideFile(slide, crops, seed);
  const runs: Run[] = [];
  console.log("model                          | peak RSS | by ½ blocks | seconds | s/MP  | blocks | glass | cells   | diameter | modality");
  for (const m of [model, ...(values.reference ? [values.reference] : [])]) {
    const r = await segment(file, m);
    runs.push(r);
    console.log(
      `${r.modelName.padEnd(30)} | ${mib(r.peakBytes).padStart(8)} | ${mib(r.halfPeakBytes).padStart(11)} | ${r.seconds.toFixed(0).padStart(7)} | ${(r.seconds / megapixels).toFixed(3)} | ${String(r.blocks).padStart(6)} | ${String(r.glassBlocks).padStart(5)} | ${String(r.cells).padStart(7)} | ${r.diameter.padStart(8)} | ${r.modality}`,
    );
  }
  for (const r of runs)
    console.log(
      `${r.modelName}: peak RSS ${(r.peakBytes / 1e9).toFixed(2)} GB, ${r.peakBytes <= TARGET_BYTES ? "within" : "OVER"} the 1.5 GB target${r.peakBytes > r.halfPeakBytes * 1.05 ? `; still grew after half of the blocks (${mib(r.halfPeakBytes)} then)` : ""}`,
    );
  if (runs.length === 2)
    console.log(`s/MP of ${runs[0]!.modelName} is ${(runs[0]!.seconds / runs[1]!.seconds).toFixed(2)}x that of ${runs[1]!.modelName} (same slide, same run)`);
  if (values.clean) {
    rmSync(file, { force: true });
    console.log(`removed ${file}`);
  }
}

await main();
