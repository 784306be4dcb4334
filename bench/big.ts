// npm run bench:big [-- --sizes 4096,8192,16384,32768] [--model <onnx>] [--provider cpu|webgpu|cuda|auto] [--memory-mb N]
// Block-wise segmentation of synthetic fluorescence mosaics (test/fixtures/mosaic.ts, rendered block by
// block, never held whole) at each size, each in a fresh child process. Prints, per size: peak RSS
// of the process, seconds per megapixel, blocks, cells found and true, AP@0.5 against the truth
// (scored cell by cell as the cells stream out), and, where the whole image fits in memory
// (<= 8192²), the seam-merge agreement: AP@0.5 of block-wise cells with small blocks (1024² cores)
// against the whole image segmented at once. Targets (issue): peak RSS <= 1.5 GB at every size,
// s/MP at 32768² within 1.25x of 8192², agreement >= 0.99.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { Roi } from "../schema/roi.ts";
import { renderLabels, ScanPolygon } from "../common/geometry/roi-raster.ts";
import { averagePrecision } from "../common/scoring/average-precision.ts";
import { segmentInBlocks } from "../gpu-runner/engine/blocks/segment-blocks.ts";
import { startComputeThread } from "../gpu-runner/engine/compute-thread/compute-thread.ts";
import type { ExecutionProviderChoice } from "../gpu-runner/engine/model.ts";
import { chooseModel } from "../gpu-runner/engine/model-choice.ts";
import { segmentImage } from "../gpu-runner/engine/segment.ts";
import { SyntheticMosaic } from "../test/fixtures/mosaic.ts";

const { values } = parseArgs({
  options: {
    sizes: { type: "string", default: "4096,8192,16384,32768" },
    model: { type: "string" },
    provider: { type: "string", default: "cpu" },
    "memory-mb": { type: "string" },
    child: { type: "string" },
    compare: { type: "boolean", default: false },
    trace: { type: "boolean", default: false },
  },
});

/** Core side of the forced-small blocks the agreement is measured with. */
const SMALL_CORE = 1024;
/** Largest side segmented whole for the agreement (8192²: about 2.3 GB). */
const WHOLE_LIMIT = 8192;

interface ChildReport {
  size: number;
  peakMB: number;
  seconds: number;
  blocks: number;
  coreSide: number;
  diameter: number;
  cells: number;
  truth: number;
  apTruth: number;
  networkShare: number;
  agreement?: number;
  wholeCells?: number;
}

function parent(): void {
  const sizes = values.sizes.split(",").map(Number);
  console.log(`bench:big: model ${values.model ?? "cpsam"}, provider ${values.provider}, block memory ${values["memory-mb"] ?? "default"} MB`);
  console.log("size      | peak RSS | s/MP  | blocks (core) | diameter | cells / true     | AP@0.5 truth | seam agreement (1024² blocks vs whole)");
  const rates = new Map<number, number>();
  for (const size of sizes) {
    const run = (compare: boolean) => {
      const args = [fileURLToPath(import.meta.url), "--child", String(size), "--provider", values.provider];
      if (values.model) args.push("--model", values.model);
      if (values["memory-mb"]) args.push("--memory-mb", values["memory-mb"]);
      if (compare) args.push("--compare");
      const out = spawnSync(process.execPath, args, { encoding: "utf8", maxBuffer: 64 * 2 ** 20 });
      const line = out.stdout.split("\n").find((l) => l.startsWith("{"));
      if (out.status !== 0 || !line) throw new Error(`child for ${size}² failed (${out.status}): ${out.stderr.slice(-2000)}`);
      return JSON.parse(line) as ChildReport;
    };
    const r = run(false);
    const rate = r.seconds / ((size * size) / 1e6);
    rates.set(size, rate);
    let agreement = "-";
    if (size <= WHOLE_LIMIT) {
      const c = run(true);
      agreement = `${c.agreement!.toFixed(4)} (${c.cells} vs ${c.wholeCells} cells)`;
    }
    console.log(
      `${`${size}²`.padEnd(9)} | ${`${r.peakMB.toFixed(0)} MB`.padStart(8)} | ${rate.toFixed(3)} | ${`${r.blocks} (${r.coreSide})`.padEnd(13)} | ${r.diameter.toFixed(1).padStart(8)} | ${`${r.cells} / ${r.truth}`.padEnd(16)} | ${r.apTruth.toFixed(4).padStart(12)} | ${agreement}`,
    );
  }
  const base = rates.get(8192);
  for (const [size, rate] of rates) if (base && size > 8192) console.log(`s/MP at ${size}² is ${(rate / base).toFixed(2)}x that at 8192² (target <= 1.25x)`);
}

async function child(size: number): Promise<void> {
  void startComputeThread();
  const mosaic = new SyntheticMosaic(size, size);
  const model = await chooseModel(values.model, values.provider as ExecutionProviderChoice);
  const kept: Roi[] = [];
  let matched = 0;
  const scorer = new TruthScorer(mosaic);
  const started = performance.now();
  const result = await segmentInBlocks(
    mosaic.regions(),
    model,
    { diameter: "auto" },
    {
      ...(values.compare ? { coreSide: SMALL_CORE } : {}),
      ...(values["memory-mb"] ? { memoryBudgetBytes: Number(values["memory-mb"]) * 2 ** 20 } : {}),
      ...(values.trace && {
        onBlock: (_block: unknown, index: number, total: number) =>
          console.error(
            `block ${index + 1}/${total}: ${Object.entries(process.memoryUsage())
              .map(([k, v]) => `${k} ${(v / 2 ** 20).toFixed(0)}`)
              .join(", ")} MB, peak ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`,
          ),
      }),
      onCells: (rois) => {
        for (const roi of rois) if (scorer.iou(roi) > 0.5) matched++;
        if (values.compare) kept.push(...rois);
      },
    },
  );
  const seconds = (performance.now() - started) / 1000;
  const peakMB = process.resourceUsage().maxRSS / 1024;
  const truth = mosaic.count();
  const report: ChildReport = {
    size,
    peakMB,
    seconds,
    blocks: result.blocks,
    coreSide: result.coreSide,
    diameter: result.diameter,
    cells: result.cellCount,
    truth,
    apTruth: matched / (result.cellCount + truth - matched),
    networkShare: result.timings.network / (seconds * 1000),
  };
  if (values.compare) {
    const whole = await segmentImage(mosaic.render(0, 0, size, size), model, { diameter: result.diameter });
    const blockLabels = await renderLabels(size, size, inOrder(kept));
    report.agreement = averagePrecision(whole.labels, blockLabels, [0.5]).ap[0];
    report.wholeCells = whole.rois.length;
  }
  console.log(JSON.stringify(report));
  process.exit(0);
}

/** IoU of a cell with the true nucleus under its centroid, from the cell's outline and the nucleus's shape. */
class TruthScorer {
  private readonly mosaic: SyntheticMosaic;
  private readonly row: Uint32Array;

  constructor(mosaic: SyntheticMosaic) {
    this.mosaic = mosaic;
    this.row = new Uint32Array(mosaic.width);
  }

  iou(roi: Roi): number {
    const { mosaic, row } = this;
    const id = mosaic.labelAt(Math.floor(roi.centroid_x), Math.floor(roi.centroid_y));
    if (id === 0) return 0;
    const nucleus = mosaic.nucleus((id - 1) % mosaic.columns, Math.floor((id - 1) / mosaic.columns))!;
    const x0 = Math.max(0, Math.min(roi.bbox_x, Math.floor(nucleus.cx - nucleus.a - 1)));
    const x1 = Math.min(mosaic.width, Math.max(roi.bbox_x + roi.bbox_w, Math.ceil(nucleus.cx + nucleus.a + 1)));
    const y0 = Math.max(0, Math.min(roi.bbox_y, Math.floor(nucleus.cy - nucleus.a - 1)));
    const y1 = Math.min(mosaic.height, Math.max(roi.bbox_y + roi.bbox_h, Math.ceil(nucleus.cy + nucleus.a + 1)));
    const shape = new ScanPolygon([roi.polygon]);
    let intersection = 0,
      union = 0;
    for (let y = y0; y < y1; y++) {
      row.fill(0, x0, x1);
      shape.fillRow(y, row, mosaic.width, 1);
      for (let x = x0; x < x1; x++) {
        const inCell = row[x] === 1;
        const inTruth = SyntheticMosaic.radius2(nucleus, x, y) < 1;
        if (inCell && inTruth) intersection++;
        if (inCell || inTruth) union++;
      }
    }
    return union === 0 ? 0 : intersection / union;
  }
}

async function* inOrder(rois: Roi[]): AsyncGenerator<Roi> {
  yield* rois;
}

if (values.child) await child(Number(values.child));
else parent();
