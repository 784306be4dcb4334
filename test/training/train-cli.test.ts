// `npm run train` end to end on a tiny PNG dataset: trains, validates through the engine, writes
// a servable model, a checkpoint and a training record, and resumes from the checkpoint.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encode } from "fast-png";
import { afterAll, describe, expect, it } from "vitest";
import { loadModel } from "../../gpu-runner/engine/model.ts";
import { parameterLayout } from "../../gpu-runner/network/parameter-layout.ts";
import { weightsFromModel } from "../../gpu-runner/network/weights-from-model.ts";
import { initialParameters } from "../../gpu-runner/training/initial-parameters.ts";
import { exportModel, writeModel } from "../../gpu-runner/training/model-export.ts";
import { defaultTrainingConfig } from "../../gpu-runner/training/training-config.ts";
import { syntheticNuclei } from "./synthetic-nuclei.ts";

const root = mkdtempSync(join(tmpdir(), "train-cli-"));
const data = join(root, "nuclei");
const out = join(root, "run");
afterAll(() => rmSync(root, { recursive: true, force: true }));

function writeDataset(dir = data, seed = 20): void {
  mkdirSync(join(dir, "images"), { recursive: true });
  mkdirSync(join(dir, "labels"), { recursive: true });
  for (let i = 0; i < 3; i++) {
    const { image, labels } = syntheticNuclei(96, 96, 7, seed + i);
    const pixels = Uint8Array.from(image, (v) => Math.max(0, Math.min(255, Math.round(40 + 200 * v))));
    writeFileSync(join(dir, "images", `img${i}.png`), encode({ width: 96, height: 96, data: pixels, depth: 8, channels: 1 }));
    writeFileSync(join(dir, "labels", `img${i}.png`), encode({ width: 96, height: 96, data: Uint16Array.from(labels), depth: 16, channels: 1 }));
  }
}

function train(...args: string[]): string {
  return execFileSync(
    process.execPath,
    ["gpu-runner/cli/train.ts", "--data", data, "--out", out, "--threads", "1", "--validate-every", "1", "--checkpoint-every", "1", ...args],
    { encoding: "utf8" },
  );
}

describe("npm run train", () => {
  it("trains, validates, writes model + checkpoint + record, then resumes where it stopped", async () => {
    writeDataset();
    const first = train("--steps", "1");
    expect(first).toMatch(/3 labelled images, 2 for training, 1 held out/);
    expect(first).toMatch(/validation at step 1: AP@0\.5 nuclei \d\.\d{3}/);
    const record = JSON.parse(readFileSync(join(out, "training-record.json"), "utf8"));
    expect(record.stepsCompleted).toBe(1);
    expect(record.config.sampling).toBe("per-set");
    expect(record.images.validation).toHaveLength(1);
    expect(record.history.finalValidation.images).toBe(1);
    const model = await loadModel(join(out, "cpsam.onnx"), { executionProvider: "cpu", log: () => {} });
    expect(model.manifest).toMatchObject({ name: "cpsam", channels: 1, diameter: 24 });

    const second = train("--steps", "2");
    expect(second).toMatch(/resuming .*checkpoint\.bin at step 1/);
    expect(JSON.parse(readFileSync(join(out, "training-record.json"), "utf8")).stepsCompleted).toBe(2);
  }, 120_000);

  it("trains a specialist on some groups with the hold-out drawn over all of them (--groups)", () => {
    const more = join(root, "more");
    writeDataset(more, 40);
    const specialist = join(root, "specialist");
    const log = execFileSync(
      process.execPath,
      [
        "gpu-runner/cli/train.ts",
        "--data",
        data,
        "--data",
        more,
        "--groups",
        "more",
        "--out",
        specialist,
        "--threads",
        "1",
        "--steps",
        "1",
        "--validate-every",
        "0",
      ],
      { encoding: "utf8" },
    );
    expect(log).toMatch(/6 labelled images, 2 for training, 1 held out/);
    const record = JSON.parse(readFileSync(join(specialist, "training-record.json"), "utf8"));
    expect(record.groups).toEqual(["more"]);
    expect([...record.images.training, ...record.images.validation].every((id: string) => id.startsWith("more/"))).toBe(true);
    expect(() =>
      execFileSync(process.execPath, ["gpu-runner/cli/train.ts", "--data", data, "--groups", "histology", "--out", specialist], {
        encoding: "utf8",
        stdio: "pipe",
      }),
    ).toThrow(/--groups: no images in group "histology"/);
  }, 120_000);

  it("starts a colour network from a one-channel model with --input colour, and writes a colour model", async () => {
    const network = { inputChannels: 1, widths: [4, 8] };
    const gray = exportModel(defaultTrainingConfig(1, { network }), initialParameters(parameterLayout(network), 2), "gray", "0", { source: "test" });
    const from = writeModel(root, gray);
    const colourOut = join(root, "colour-run");
    const output = train("--from", from, "--input", "colour", "--steps", "1", "--out", colourOut, "--name", "colour");
    expect(output).toMatch(/fine-tuning from .*gray\.onnx, its one channel's first-layer weights spread over three colour planes/);
    expect(output).toMatch(/read for a colour network/);
    const model = await loadModel(join(colourOut, "colour.onnx"), { executionProvider: "cpu", log: () => {} });
    expect(model.manifest).toMatchObject({ name: "colour", channels: 3, input: "modality-colour" });
    expect(model.manifest.provenance.source).toMatch(/one-channel first layer spread over three colour planes/);
    expect(weightsFromModel(new Uint8Array(readFileSync(join(colourOut, "colour.onnx")))).network).toEqual({ inputChannels: 3, widths: [4, 8] });
    // A resumed run keeps its kind; asking for another is refused.
    const resumeAsOneChannel = ["gpu-runner/cli/train.ts", "--data", data, "--out", colourOut, "--input", "channel"];
    expect(() => execFileSync(process.execPath, resumeAsOneChannel, { encoding: "utf8", stdio: "pipe" })).toThrow(
      /trains a network of 3 input channel\(s\); --input channel does not match it/,
    );
  }, 120_000);

  it("explains bad arguments instead of crashing", () => {
    expect(() => execFileSync(process.execPath, ["gpu-runner/cli/train.ts", "--data", join(root, "missing")], { encoding: "utf8", stdio: "pipe" })).toThrow(
      /has no images\/ and labels\/ folders/,
    );
    expect(() => execFileSync(process.execPath, ["gpu-runner/cli/train.ts", "--data", data, "--zoom-range", "2"], { encoding: "utf8", stdio: "pipe" })).toThrow(
      /--zoom-range must be at least 0 and below 2, got "2"/,
    );
    expect(() =>
      execFileSync(process.execPath, ["gpu-runner/cli/train.ts", "--data", data, "--sampling", "uniform"], { encoding: "utf8", stdio: "pipe" }),
    ).toThrow(/--sampling must be one of per-set, per-image, sqrt, got "uniform"/);
    expect(() => execFileSync(process.execPath, ["gpu-runner/cli/train.ts", "--data", data, "--input", "rgb"], { encoding: "utf8", stdio: "pipe" })).toThrow(
      /--input must be channel or colour, got "rgb"/,
    );
  });
});
