// `segment --model auto`: each image gets the public model the service recommends for its modality,
// read from the file before it is uploaded.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encode } from "fast-png";
import { describe, expect, it } from "vitest";
import { chooseModelForFile, modelFor } from "../../client/model-choice.ts";
import type { ModelRecord } from "../../schema/api-records.ts";

const model = (id: string, isPublic: boolean, recommended: ModelRecord["recommended_for"]): ModelRecord => ({
  id,
  name: id,
  version: "1",
  description: "",
  is_public: isPublic,
  base_model_id: null,
  recommended_for: recommended,
  training: null,
  created_at: "2026-11-26T00:00:00.000Z",
});
const served = [
  model("cpsam", true, ["fluorescence"]),
  model("cpsam-large", true, ["brightfield"]),
  model("cpsam-histology", true, ["histology"]),
  model("mine", false, []),
];

/** A 96x96 PNG of nuclei on a grid: `inside` and `outside` give a pixel's channel values. */
function png(channels: 1 | 3, inside: number[], outside: number[]): string {
  const data = new Uint8Array(channels * 96 * 96);
  for (let y = 0; y < 96; y++)
    for (let x = 0; x < 96; x++) {
      const nucleus = ((x % 16) - 8) ** 2 + ((y % 16) - 8) ** 2 < 25;
      const texture = (x * 7 + y * 13) % 5;
      for (let c = 0; c < channels; c++) data[(y * 96 + x) * channels + c] = (nucleus ? inside : outside)[c]! + texture;
    }
  const path = join(mkdtempSync(join(tmpdir(), "model-choice-")), "image.png");
  writeFileSync(path, encode({ width: 96, height: 96, depth: 8, channels, data }));
  return path;
}

describe("the model chosen for an image with --model auto", () => {
  it("is the public model the service lists as recommended for the modality, cpsam where none is", () => {
    expect(modelFor("histology", served)).toBe("cpsam-histology");
    expect(modelFor("brightfield", served)).toBe("cpsam-large");
    expect(modelFor("fluorescence", served)).toBe("cpsam");
    expect(modelFor(null, served)).toBe("cpsam");
  });

  it("reads the modality from the file and says why", async () => {
    const stained = await chooseModelForFile(png(3, [90, 60, 150], [230, 170, 200]), served);
    expect(stained.modelId).toBe("cpsam-histology");
    expect(stained.reason).toMatch(/^histology: stained/);
    const fluorescent = await chooseModelForFile(png(1, [200], [10]), served);
    expect(fluorescent).toEqual({ modelId: "cpsam", reason: expect.stringMatching(/^fluorescence: a dark field/) });
  });

  it("gives a file it cannot read the default model, and says so", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "model-choice-")), "notes.tif");
    writeFileSync(path, "not an image");
    expect(await chooseModelForFile(path, served)).toEqual({ modelId: "cpsam", reason: expect.stringMatching(/^modality not read here/) });
  });
});
