// npm run bench:hostile — the crafted inputs of issue 24 against the parsers that read them: the
// annotation import (worker/annotations, as POST /segmentation runs it), the engine's whole-image
// decoder and region reader (common/decode) and the upload probe (common/decode/probe.ts through ranged reads,
// as worker/services/image-probe.ts runs it).
// Each case runs in a child process of its own, so a case that runs away is killed at --timeout
// without taking the others with it, and its memory is its own. Prints per case: the CPU time of
// the parse alone (process.cpuUsage around the call, the file already in memory), the peak
// resident memory above the level before the call, and the outcome (accepted, or the refusal a
// client sees: HTTP status and detail).
//
// Options: --timeout S (default 60: a case still running is killed and reported as "> S s"),
// --only <substring of a case name>. Files are built once into $TMPDIR/cellseg-hostile-inputs.

import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { bytesSource, openImageRegions } from "../common/decode/region-reader.ts";
import { decodeImage, probeImageSource } from "../common/decode/index.ts";
import { ImageDecodeError } from "../schema/image-formats/index.ts";
import { AnnotationImportError, importAnnotation, importErrorStatus } from "../worker/annotations/index.ts";
import { stripsSharingLzwData } from "../test/fixtures/hostile-images.ts";
import {
  combGeoJson,
  combRoi,
  deflateAfterEmptyBlocks,
  featuresAtTheVertexLimit,
  fullImageRectangles,
  labelsAtTopAndBottom,
  oneRingOfPositions,
  rectangleRoi,
  zipOfOverlappingEntries,
} from "../test/fixtures/hostile-annotations.ts";

type Operation = (bytes: Uint8Array) => Promise<string> | string;

interface Case {
  name: string;
  file: string;
  build: () => Uint8Array;
  run: Operation;
}

const MB = 1e6;

/** POST /segmentation's answer to the file, for an image of width x height. */
const annotationImport =
  (width: number, height: number): Operation =>
  (bytes) => {
    try {
      const imported = importAnnotation(bytes, width, height);
      return `201: ${imported.rois.length} objects`;
    } catch (error) {
      if (error instanceof AnnotationImportError) return `${importErrorStatus(error.kind)}: ${error.message}`;
      throw error;
    }
  };

const refusedImage = (error: unknown): string => {
  if (error instanceof ImageDecodeError) return `${error.kind === "unsupported" ? 415 : 422} (${error.kind}): ${error.message}`;
  throw error;
};

const wholeDecode: Operation = (bytes) => {
  try {
    const image = decodeImage(bytes);
    return `decoded ${image.width}x${image.height}`;
  } catch (error) {
    return refusedImage(error);
  }
};

const uploadProbe: Operation = async (bytes) => {
  try {
    const info = await probeImageSource(bytesSource(bytes), { regions: true });
    return `accepted at upload: ${info.format} ${info.width}x${info.height}`;
  } catch (error) {
    return refusedImage(error);
  }
};

const regionRead =
  (width: number, height: number): Operation =>
  async (bytes) => {
    try {
      const image = await openImageRegions(bytesSource(bytes));
      await image.readRegion(0, 0, width, height);
      return `read a ${width}x${height} region`;
    } catch (error) {
      return refusedImage(error);
    }
  };

// 20,000,000 clear codes are 22.5 MB; 84,400,000 are 95 MB.
const lzw64 = () => stripsSharingLzwData(64, 64, 20_000_000);
const lzw16k = () => stripsSharingLzwData(64, 16_384, 84_400_000);

const cases: Case[] = [
  {
    name: "GeoJSON comb polygon, 100,000 vertices, 256x4 image",
    file: "comb.geojson",
    build: () => combGeoJson(100_000, 256, 4),
    run: annotationImport(256, 4),
  },
  { name: "ImageJ .roi comb polygon, 100,000 vertices, 256x4 image", file: "comb.roi", build: () => combRoi(100_000, 256, 4), run: annotationImport(256, 4) },
  {
    name: "GeoJSON 100,000 full-image rectangles, 2560x2160 image",
    file: "rectangles.geojson",
    build: () => fullImageRectangles(100_000, 2560, 2160),
    run: annotationImport(2560, 2160),
  },
  {
    name: "label TIFF 2048x2048 16-bit, 65,535 labels at top and bottom",
    file: "labels-top-bottom.tif",
    build: () => labelsAtTopAndBottom(2048, 2048, 65_535),
    run: annotationImport(2048, 2048),
  },
  { name: "TIFF 64 strips sharing 22.5 MB of LZW clear codes: whole decode", file: "lzw-64.tif", build: lzw64, run: wholeDecode },
  { name: "TIFF 64 strips sharing 22.5 MB of LZW clear codes: upload probe", file: "lzw-64.tif", build: lzw64, run: uploadProbe },
  { name: "TIFF 64 strips sharing 22.5 MB of LZW clear codes: label import", file: "lzw-64.tif", build: lzw64, run: annotationImport(64, 64) },
  { name: "TIFF 16,384 strips sharing 95 MB of LZW clear codes: upload probe", file: "lzw-16k.tif", build: lzw16k, run: uploadProbe },
  { name: "TIFF 16,384 strips sharing 95 MB of LZW clear codes: whole decode", file: "lzw-16k.tif", build: lzw16k, run: wholeDecode },
  { name: "TIFF 16,384 strips sharing 95 MB of LZW clear codes: 64x512 region", file: "lzw-16k.tif", build: lzw16k, run: regionRead(64, 512) },
  {
    name: "ZIP 100,000 entries naming one 30 MB deflate stream",
    file: "overlapping.zip",
    build: () => zipOfOverlappingEntries(100_000, "a.roi", deflateAfterEmptyBlocks(6_000_000, rectangleRoi(0, 0, 2, 2)), 8, 64),
    run: annotationImport(64, 64),
  },
  { name: "GeoJSON 40 MiB of positions in one ring", file: "positions.geojson", build: () => oneRingOfPositions(6_990_000), run: annotationImport(64, 64) },
  {
    name: "GeoJSON at the vertex limit: 50 features x 100,000 vertices",
    file: "vertex-limit.geojson",
    build: () => featuresAtTheVertexLimit(50, 100_000),
    run: annotationImport(128, 128),
  },
];

interface Measurement {
  cpuMs: number;
  memoryMb: number;
  outcome: string;
}

async function measure(c: Case, path: string): Promise<Measurement> {
  const bytes = new Uint8Array(readFileSync(path));
  globalThis.gc?.();
  const rssBefore = process.memoryUsage().rss;
  const cpu = process.cpuUsage();
  let outcome: string;
  try {
    outcome = await c.run(bytes);
  } catch (error) {
    outcome = `crashed: ${(error as Error).message}`;
  }
  const used = process.cpuUsage(cpu);
  const peak = process.resourceUsage().maxRSS * 1024;
  return { cpuMs: (used.user + used.system) / 1000, memoryMb: Math.max(0, peak - rssBefore) / MB, outcome };
}

const { values } = parseArgs({ options: { timeout: { type: "string", default: "60" }, only: { type: "string" }, child: { type: "string" } } });

if (values.child !== undefined) {
  const c = cases.find((x) => x.name === values.child)!;
  process.stdout.write(`${JSON.stringify(await measure(c, join(tmpdir(), "cellseg-hostile-inputs", c.file)))}\n`);
} else {
  const timeout = Number(values.timeout);
  const dir = join(tmpdir(), "cellseg-hostile-inputs");
  mkdirSync(dir, { recursive: true });
  const chosen = cases.filter((c) => !values.only || c.name.includes(values.only));
  console.log(`${"case".padEnd(72)} ${"MB".padStart(6)} ${"CPU ms".padStart(9)} ${"peak MB".padStart(8)}  outcome`);
  for (const c of chosen) {
    const path = join(dir, c.file);
    if (!existsSync(path)) writeFileSync(path, c.build());
    const size = readFileSync(path).length / MB;
    const result = await new Promise<Measurement | string>((resolve) => {
      const child = spawn(process.execPath, ["--expose-gc", "--max-old-space-size=4096", process.argv[1]!, "--child", c.name], {
        stdio: ["ignore", "pipe", "inherit"],
      });
      let out = "";
      child.stdout.on("data", (d: Buffer) => (out += d));
      const timer = setTimeout(() => child.kill("SIGKILL"), timeout * 1000);
      child.on("exit", (code, signal) => {
        clearTimeout(timer);
        if (signal === "SIGKILL") resolve(`> ${timeout} s: killed, still running`);
        else if (code !== 0) resolve(`exited with code ${code}`);
        else resolve(JSON.parse(out) as Measurement);
      });
    });
    const row =
      typeof result === "string"
        ? `${"-".padStart(9)} ${"-".padStart(8)}  ${result}`
        : `${result.cpuMs.toFixed(0).padStart(9)} ${result.memoryMb.toFixed(0).padStart(8)}  ${result.outcome.slice(0, 160)}`;
    console.log(`${c.name.padEnd(72)} ${size.toFixed(2).padStart(6)} ${row}`);
  }
}
