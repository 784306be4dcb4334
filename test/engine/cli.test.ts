import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encode } from "fast-png";
import { describe, expect, it } from "vitest";
import { decodeImage } from "../../common/decode/index.ts";
import { renderNuclei } from "../fixtures/image.ts";
import { discField } from "../fixtures/labels.ts";

function run(script: string, args: string[]) {
  return spawnSync(process.execPath, [join("gpu-runner/cli", script), ...args], { encoding: "utf8", timeout: 60_000 });
}

describe("command-line tools", () => {
  const dir = mkdtempSync(join(tmpdir(), "cli-"));
  const scene = discField(180, 140, 20, 6, 9, 4);
  const image = renderNuclei(scene);
  mkdirSync(join(dir, "set", "images"), { recursive: true });
  mkdirSync(join(dir, "set", "labels"), { recursive: true });
  writeFileSync(join(dir, "set", "images", "cells.png"), encode({ width: 180, height: 140, depth: 16, channels: 1, data: Uint16Array.from(image.data) }));
  writeFileSync(join(dir, "set", "labels", "cells.png"), encode({ width: 180, height: 140, depth: 16, channels: 1, data: Uint16Array.from(scene.labels) }));

  it("segment writes a 16-bit label PNG, GeoJSON and CSV that agree with each other", () => {
    const out = join(dir, "out");
    const result = run("segment.ts", [join(dir, "set", "images", "cells.png"), "--model", "reference", "--diameter", "15", "--provider", "cpu", "--out", out]);
    expect(result.stderr).not.toMatch(/^segment:/m);
    expect(result.status).toBe(0);
    const masks = decodeImage(new Uint8Array(readFileSync(join(out, "cells_masks.png"))));
    expect(masks).toMatchObject({ width: 180, height: 140, channels: 1, bitDepth: 16 });
    const count = Math.max(...masks.data);
    const csv = readFileSync(join(out, "cells_measurements.csv"), "utf8").trim().split("\r\n");
    const geojson = JSON.parse(readFileSync(join(out, "cells_rois.geojson"), "utf8"));
    expect(csv.length - 1).toBe(count);
    expect(geojson.features.length).toBe(count);
    expect(count).toBeGreaterThanOrEqual(18);
    const area = csv[0]!.split(",").indexOf("area_px");
    expect(Number(csv[1]!.split(",")[area])).toBe(masks.data.filter((v) => v === 1).length);
  });

  it("segment --block-size cuts the image into blocks and writes the same kind of outputs, cells whole across seams", () => {
    const whole = join(dir, "whole");
    const blocks = join(dir, "blocks");
    const common = [join(dir, "set", "images", "cells.png"), "--model", "reference", "--diameter", "15", "--provider", "cpu"];
    expect(run("segment.ts", [...common, "--out", whole]).status).toBe(0);
    const result = run("segment.ts", [...common, "--block-size", "64", "--out", blocks]);
    expect(result.stderr).not.toMatch(/^segment:/m);
    expect(result.stdout).toMatch(/block 9\/9/);
    expect(result.stdout).toMatch(/cells, confluency .*\(block by block: 9 blocks, 0 of them glass\)/);
    const read = (folder: string) => decodeImage(new Uint8Array(readFileSync(join(folder, "cells_masks.png")))).data;
    const count = (labels: Float32Array) => Math.max(...labels);
    expect(count(read(blocks))).toBe(count(read(whole)));
    const csv = readFileSync(join(blocks, "cells_measurements.csv"), "utf8").trim().split("\r\n");
    expect(csv.length - 1).toBe(count(read(blocks)));
  });

  it("segment takes a public model by name and lists them when the name is unknown", () => {
    const byName = run("segment.ts", [join(dir, "set", "images", "cells.png"), "--model", "cpsam", "--provider", "cpu", "--out", join(dir, "named")]);
    expect(byName.status).toBe(0);
    expect(byName.stdout).toMatch(/model cpsam@/);
    const unknown = run("segment.ts", [join(dir, "set", "images", "cells.png"), "--model", "no-such-model", "--provider", "cpu"]);
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toMatch(/no public model named "no-such-model" \(public models: .*cpsam/);
  });

  it("segment without --model picks the public model recommended for what the image is, and says why", () => {
    const fluorescent = run("segment.ts", [join(dir, "set", "images", "cells.png"), "--provider", "cpu", "--out", join(dir, "auto-fluorescence")]);
    expect(fluorescent.status).toBe(0);
    expect(fluorescent.stdout).toMatch(/^model cpsam: recommended for fluorescence \(a dark field/m);
    // The same nuclei as purple haematoxylin on pink tissue, as RGB.
    const plane = 180 * 140;
    const rgb = new Uint8Array(3 * plane);
    const top = Math.max(...image.data);
    for (let i = 0; i < plane; i++) {
      const v = image.data[i]! / top;
      rgb.set([230 - 150 * v, 170 - 120 * v, 205 - 60 * v].map(Math.round), 3 * i);
    }
    writeFileSync(join(dir, "stained.png"), encode({ width: 180, height: 140, depth: 8, channels: 3, data: rgb }));
    const stained = run("segment.ts", [join(dir, "stained.png"), "--provider", "cpu", "--out", join(dir, "auto-histology")]);
    expect(stained.status).toBe(0);
    expect(stained.stdout).toMatch(/^model cpsam-histology: recommended for histology \(stained/m);
    expect(stained.stdout).toMatch(/model cpsam-histology@1/);
    // It finds the 20 nuclei.
    const cells = Number(/stained\.png: 180x140x3, (\d+) cells/.exec(stained.stdout)?.[1]);
    expect(cells).toBeGreaterThanOrEqual(18);
    expect(cells).toBeLessThanOrEqual(22);
  }, 60_000);

  it("segment explains a missing image and bad options", () => {
    const noImage = run("segment.ts", [join(dir, "absent.tif"), "--model", "reference", "--provider", "cpu"]);
    expect(noImage.status).toBe(1);
    expect(noImage.stderr).toMatch(/segment: .*absent\.tif/);
    const badDiameter = run("segment.ts", [join(dir, "set", "images", "cells.png"), "--model", "reference", "--diameter", "big"]);
    expect(badDiameter.stderr).toContain('--diameter expects a number, got "big"');
  });

  it("eval prints AP at 0.5/0.75/0.9, object counts and timings per dataset", () => {
    const result = run("eval.ts", ["--data", dir, "--model", "reference", "--diameter", "15", "--provider", "cpu"]);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/set: 1 images, AP@0\.5 (0\.9\d\d|1\.000) {2}AP@0\.75 \d\.\d{3} {2}AP@0\.9 \d\.\d{3}; objects true 20, predicted \d+/);
    expect(result.stdout).toMatch(/mean ms per image: decode \d+, normalize \d+, diameter \d+, rescale \d+, network \d+, masks \d+, rois \d+/);
  });

  it("eval sweeps listed mask parameters from one network pass per image: a line per combination, the first the same as the run's own", () => {
    const result = run("eval.ts", [
      "--data",
      dir,
      "--model",
      "reference",
      "--diameter",
      "15",
      "--provider",
      "cpu",
      "--flow-threshold",
      "0.4,0",
      "--cellprob-threshold=20,0",
    ]);
    expect(result.status).toBe(0);
    const own = result.stdout.match(/set: 1 images, AP@0\.5 (\d\.\d{3}) {2}AP@0\.75 (\d\.\d{3}) {2}AP@0\.9 (\d\.\d{3})/)!;
    const line = (combination: string) =>
      result.stdout.match(new RegExp(`${combination} +AP@0\\.5 (\\d\\.\\d{3}) {2}AP@0\\.75 (\\d\\.\\d{3}) {2}AP@0\\.9 (\\d\\.\\d{3})`))!;
    expect(line("cellprobThreshold 20, flowThreshold 0.4").slice(1)).toEqual(own.slice(1));
    // A threshold no logit reaches finds nothing (AP 0); the usual one finds the nuclei.
    expect(line("cellprobThreshold 20, flowThreshold 0")[1]).toBe("0.000");
    expect(Number(line("cellprobThreshold 0, flowThreshold 0.4")[1])).toBeGreaterThanOrEqual(0.9);
    expect(Number(line("cellprobThreshold 0, flowThreshold 0")[1])).toBeGreaterThanOrEqual(0.9);
  });

  it("eval --augment averages flipped runs and says so", () => {
    const result = run("eval.ts", ["--data", dir, "--model", "reference", "--diameter", "15", "--provider", "cpu", "--augment"]);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain("flip averaging");
    expect(result.stdout).toMatch(/set: 1 images, AP@0\.5 (0\.9\d\d|1\.000)/);
  });

  it("eval --diameter auto --rescale also scores the images resized, with a table of AP@0.5 and diameters", () => {
    const result = run("eval.ts", ["--data", dir, "--model", "reference", "--diameter", "auto", "--rescale", "2", "--provider", "cpu"]);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/set x2: 1 images, AP@0\.5 (0\.9\d\d|1\.000)/);
    expect(result.stdout).toMatch(/set +1 +1 +\d\.\d{3} +\d+\.\d +\d+\.\d/);
    expect(result.stdout).toMatch(/set +2 +1 +(0\.9\d\d|1\.000) +\d+\.\d +\d+\.\d/);
    const badDiameter = run("eval.ts", ["--data", dir, "--model", "reference", "--diameter", "big"]);
    expect(badDiameter.stderr).toContain('--diameter must be a positive number, "auto", "truth" or "none", got big');
  });
});
