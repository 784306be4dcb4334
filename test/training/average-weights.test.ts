// npm run average-weights: points of one run (exported models and checkpoints) become one model
// whose every weight is their mean, served with the manifest it is given.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parameterLayout } from "../../gpu-runner/network/parameter-layout.ts";
import { weightsFromModel } from "../../gpu-runner/network/weights-from-model.ts";
import { encodeCheckpoint } from "../../gpu-runner/training/checkpoint.ts";
import { initialParameters } from "../../gpu-runner/training/initial-parameters.ts";
import { exportModel, writeModel } from "../../gpu-runner/training/model-export.ts";
import { defaultTrainingConfig } from "../../gpu-runner/training/training-config.ts";
import { freshTrainingState } from "../../gpu-runner/training/trainer.ts";

const root = mkdtempSync(join(tmpdir(), "average-weights-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const network = { inputChannels: 3, widths: [4, 8] };
const config = defaultTrainingConfig(10, { network });
const layout = parameterLayout(network);

/** A fresh folder under the test's root. */
function folder(name: string): string {
  mkdirSync(join(root, name));
  return join(root, name);
}

function averageWeights(...args: string[]): string {
  return execFileSync(process.execPath, ["gpu-runner/cli/average-weights.ts", ...args], { encoding: "utf8", stdio: "pipe" });
}

describe("averaging the weights of a run's points", () => {
  it("writes the mean of an exported model's and a checkpoint's weights, with the given manifest", () => {
    const first = initialParameters(layout, 1);
    const second = initialParameters(layout, 2);
    const model = exportModel(config, first, "large", "step-10", { source: "test run", license: "test" });
    model.manifest.maskDefaults = { histology: { minSize: 30 } };
    const exported = writeModel(folder("a"), model);
    const checkpoint = join(root, "checkpoint.bin");
    writeFileSync(checkpoint, encodeCheckpoint({ ...freshTrainingState(config, second), step: 20 }));

    const out = join(root, "out");
    const output = averageWeights("--manifest", join(root, "a", "large.json"), "--out", out, "--version", "1", exported, checkpoint);
    expect(output).toMatch(/averaged 2 points/);
    const averaged = weightsFromModel(new Uint8Array(readFileSync(join(out, "large.onnx"))));
    expect(averaged.network).toEqual(network);
    for (let i = 0; i < first.length; i++) expect(averaged.params[i]).toBeCloseTo(first[i]! / 2 + second[i]! / 2, 6);
    const manifest = JSON.parse(readFileSync(join(out, "large.json"), "utf8"));
    expect(manifest).toMatchObject({ name: "large", version: "1", channels: 3, maskDefaults: { histology: { minSize: 30 } } });
    expect(manifest.provenance.source).toMatch(/test run; the mean of the weights of .*large\.onnx, .*checkpoint\.bin \(step 20\)/);
  });

  it("refuses points of networks of different shapes", () => {
    const other = { inputChannels: 3, widths: [4, 6] };
    const a = writeModel(folder("b"), exportModel(config, initialParameters(layout, 3), "b", "0", { source: "a" }));
    const b = writeModel(
      folder("c"),
      exportModel(defaultTrainingConfig(10, { network: other }), initialParameters(parameterLayout(other), 4), "c", "0", { source: "b" }),
    );
    expect(() => averageWeights("--manifest", join(root, "b", "b.json"), "--out", join(root, "never"), a, b)).toThrow(/only points of one run can be averaged/);
  });
});
