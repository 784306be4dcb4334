import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadModel, loadModelFromBytes, parseManifest, vulkanLoaderFound } from "../../gpu-runner/engine/model.ts";
import { buildReferenceModel } from "../../gpu-runner/engine/reference-model.ts";

describe("model contract", () => {
  it("loads <name>.onnx with its <name>.json manifest and logs the execution provider it chose", async () => {
    const dir = mkdtempSync(join(tmpdir(), "model-"));
    const { onnx, manifest } = buildReferenceModel({ channels: 2, diameter: 17 });
    writeFileSync(join(dir, "nuclei.onnx"), onnx);
    writeFileSync(join(dir, "nuclei.json"), JSON.stringify(manifest));
    const messages: string[] = [];
    const model = await loadModel(join(dir, "nuclei.onnx"), { executionProvider: "cpu", log: (m) => messages.push(m) });
    expect(model.manifest).toMatchObject({ name: "reference", channels: 2, diameter: 17, normalization: { lower: 1, upper: 99 } });
    expect(model.executionProvider).toBe("cpu");
    expect(messages).toEqual(["[engine] model reference@1.0.0 on cpu"]);
  });

  it("falls back through the providers on auto and says why", async () => {
    const { onnx, manifest } = buildReferenceModel();
    const messages: string[] = [];
    const model = await loadModelFromBytes(onnx, manifest, { executionProvider: "auto", log: (m) => messages.push(m) });
    expect(["cuda", "webgpu", "cpu"]).toContain(model.executionProvider);
    expect(messages[0]).toContain(`on ${model.executionProvider}`);
    if (model.executionProvider !== "cuda") expect(messages[0]).toContain("cuda unavailable");
  });

  it("starts on auto without a GPU in one calm line: no native Vulkan warning where no Vulkan loader is installed", () => {
    const engine = new URL("../../gpu-runner/engine/", import.meta.url).pathname;
    const script = `import { buildReferenceModel } from "${engine}reference-model.ts";
import { loadModelFromBytes } from "${engine}model.ts";
const { onnx, manifest } = buildReferenceModel();
await loadModelFromBytes(onnx, manifest, { executionProvider: "auto" });`;
    const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 60_000 });
    expect(run.status, run.stderr).toBe(0);
    const lines = run.stderr.split("\n").filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^\[engine\] model reference@1\.0\.0 on (cuda|webgpu|cpu)/);
    if (!vulkanLoaderFound()) {
      expect(run.stderr).not.toContain("Couldn't load Vulkan");
      expect(lines[0]).toContain("webgpu unavailable: no Vulkan loader (libvulkan.so.1) on this machine");
    }
  }, 60_000);

  it("explains a missing manifest or model file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "model-"));
    await expect(loadModel(join(dir, "absent.onnx"))).rejects.toThrow(/manifest .*absent\.json not found/);
    writeFileSync(join(dir, "half.json"), JSON.stringify(buildReferenceModel().manifest));
    await expect(loadModel(join(dir, "half"))).rejects.toThrow(/model file .*half\.onnx not found/);
  });

  it("rejects invalid manifests with the reason", () => {
    expect(() => parseManifest("{", "m.json")).toThrow(/m\.json is not valid JSON/);
    const { manifest } = buildReferenceModel();
    expect(() => parseManifest(JSON.stringify({ ...manifest, tileSize: 3 }))).toThrow(/tileSize/);
    expect(() => parseManifest(JSON.stringify({ ...manifest, provenance: undefined }))).toThrow(/provenance/);
    expect(() => parseManifest(JSON.stringify({ ...manifest, normalization: { lower: 99, upper: 1 } }))).toThrow(/lower must be below upper/);
  });

  it("rejects a colour input (modality-colour) on a manifest that does not say 3 channels", async () => {
    const { onnx, manifest } = buildReferenceModel({ channels: 1 });
    expect(() => parseManifest(JSON.stringify({ ...manifest, input: "modality-colour" }), "m.json")).toThrow(
      /m\.json: input "modality-colour" needs channels 3 .* says 1/,
    );
    await expect(loadModelFromBytes(onnx, { ...manifest, input: "modality-colour" }, { executionProvider: "cpu" })).rejects.toThrow(/needs channels 3/);
    expect(parseManifest(JSON.stringify({ ...buildReferenceModel({ channels: 3 }).manifest, input: "modality-colour" })).input).toBe("modality-colour");
    expect(() => parseManifest(JSON.stringify({ ...manifest, input: "rgb" }))).toThrow(/input/);
  });

  it("rejects a network whose input channels disagree with its manifest", async () => {
    const { onnx } = buildReferenceModel({ channels: 3 });
    const { manifest } = buildReferenceModel({ channels: 1 });
    await expect(loadModelFromBytes(onnx, manifest, { executionProvider: "cpu" })).rejects.toThrow(/3 channels, manifest says 1/);
  });
});
