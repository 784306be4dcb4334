import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { DecodedImage } from "../../common/decode/index.ts";
import { readModality } from "../../common/modality.ts";
import { type LoadedModel, loadModel } from "../../gpu-runner/engine/model.ts";
import { decidedModelInput, modalityByNetwork, otherWay, scoreWay } from "../../gpu-runner/engine/modality-by-network.ts";
import type { Modality } from "../../gpu-runner/engine/modality.ts";
import { segmentImage } from "../../gpu-runner/engine/segment.ts";
import { renderNuclei } from "../fixtures/image.ts";
import { discField } from "../fixtures/labels.ts";

// The committed cpsam network (24 px nuclei) on 160² crafted images whose background lies between
// the bounds of common/modality.ts, so readModality is unsure (a dark-field reading at 0.63..0.7).
const CPSAM = join(import.meta.dirname, "../../gpu-runner/models/cpsam/cpsam.onnx");
const PARAMS = { channels: undefined, modality: "auto" as const, diameter: "auto" as const, batchSize: 8, tileOverlap: 0.1 };

/**
 * Nuclei of 18-26 px on a mid-grey field with a little shading and noise. "brightfield": dark
 * nuclei with bright halos (a bright field seen out of focus); "fluorescence": bright nuclei on a
 * raised background with a few dead pixels at 0. Both put the median near 0.66 of the range.
 */
function midGrey(kind: "brightfield" | "fluorescence", seed = 3): DecodedImage & { labels: Uint32Array } {
  const { width, height, labels } = discField(160, 160, 30, 9, 13, seed);
  const data = new Float32Array(width * height);
  let state = seed;
  const noise = () => ((state = (state * 1_664_525 + 1_013_904_223) >>> 0) / 2 ** 32 - 0.5) * 10;
  const nearNucleus = (x: number, y: number) => {
    for (let dy = -2; dy <= 2; dy++)
      for (let dx = -2; dx <= 2; dx++) {
        const xx = x + dx,
          yy = y + dy;
        if (xx >= 0 && yy >= 0 && xx < width && yy < height && labels[yy * width + xx] !== 0) return true;
      }
    return false;
  };
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const inside = labels[y * width + x] !== 0;
      const shade = 8 * Math.sin(x / 29) * Math.cos(y / 31);
      const value = kind === "brightfield" ? (inside ? 60 : nearNucleus(x, y) ? 200 : 160) : inside ? 165 : 110;
      data[y * width + x] = value + shade + noise();
    }
  if (kind === "fluorescence") for (let n = 0; n < 60; n++) data[(n * 7919) % (width * height)] = 0;
  return { width, height, channels: 1, bitDepth: 8, sampleFormat: "uint", data, labels };
}

/** Mean of a plane over the pixels where `labels` is (or is not) 0. */
function meanWhere(plane: Float32Array, labels: Uint32Array, inNucleus: boolean): number {
  let sum = 0,
    n = 0;
  for (let i = 0; i < plane.length; i++)
    if ((labels[i] !== 0) === inNucleus) {
      sum += plane[i]!;
      n++;
    }
  return sum / n;
}

describe("deciding an unsure modality by the network", () => {
  let model: LoadedModel;
  beforeAll(async () => {
    model = await loadModel(CPSAM, { executionProvider: "cpu", log: () => {} });
  });

  it.each([
    ["brightfield", "dark nuclei on a mid-grey field"],
    ["fluorescence", "bright nuclei on a mid-grey field"],
  ] as const)("decides %s for %s, which the pixels leave unsure", async (truth, _scene) => {
    const image = midGrey(truth);
    const reading = readModality(image);
    expect(reading).toMatchObject({ modality: "fluorescence", sure: false });
    const passes: Modality[] = [];
    const input = await decidedModelInput(image, model, PARAMS, { onPass: (way) => passes.push(way) });
    expect(passes).toEqual(["fluorescence", "brightfield"]);
    expect(input.modality).toMatchObject({ modality: truth, source: "detected" });
    expect(input.modality?.reason).toMatch(
      new RegExp(`^unsure by the image \\(a dark field: .*\\); the network found a confident set of cells read as ${truth} \\(score`),
    );
    expect(input.modality!.reason!.length).toBeLessThanOrEqual(300);
    // The input is the one made for the way kept: nuclei bright on a dark background, either way.
    expect(meanWhere(input.image.data, image.labels, true)).toBeGreaterThan(meanWhere(input.image.data, image.labels, false) + 40);
    // The crafted cases are not close calls: the kept way scores far above the other.
    const choice = await modalityByNetwork(image, model, { ...PARAMS, diameter: undefined }, reading);
    const [kept, other] = truth === "fluorescence" ? [choice.read, choice.other] : [choice.other, choice.read];
    expect(kept.score).toBeGreaterThan(0.5);
    expect(other.score).toBeLessThan(0.2);
    expect(kept.cells).toBeGreaterThan(15);
  });

  it("segmentImage takes the network's way on an unsure image and says so", async () => {
    const result = await segmentImage(midGrey("brightfield"), model, { diameter: "auto" });
    expect(result.modality).toMatchObject({ modality: "brightfield", source: "detected", reason: expect.stringMatching(/the network found/) });
    expect(result.rois.length).toBeGreaterThan(15);
  });

  it("runs no network pass for a sure reading or a given modality", async () => {
    const sure = renderNuclei(discField(160, 160, 20, 9, 13, 5));
    expect(readModality(sure).sure).toBe(true);
    let passes = 0;
    const count = { onPass: () => passes++ };
    const input = await decidedModelInput(sure, model, PARAMS, count);
    expect(input.modality).toEqual({ modality: "fluorescence", source: "detected", reason: readModality(sure).reason });
    await decidedModelInput(midGrey("brightfield"), model, { ...PARAMS, modality: "fluorescence" }, count);
    expect(passes).toBe(0);
    const result = await segmentImage(sure, model, { diameter: "auto" });
    expect(result.modality?.reason).not.toMatch(/network/);
  });

  it("keeps the reading where neither way finds cells", async () => {
    const flat: DecodedImage = { width: 96, height: 96, channels: 1, bitDepth: 8, sampleFormat: "uint", data: new Float32Array(96 * 96) };
    for (let i = 0; i < flat.data.length; i++) flat.data[i] = 100 + ((i * 7) % 13);
    const choice = await modalityByNetwork(flat, model, PARAMS, { modality: "fluorescence", reason: "a dark field", sure: false });
    expect(choice.decision.modality).toBe("fluorescence");
    expect(choice.decision.reason).toMatch(/no clearer cells either way: kept fluorescence/);
  });
});

describe("the other way and the score", () => {
  it("reads a dark-field image's alternative as brightfield when gray and histology in colour", () => {
    expect(otherWay("fluorescence", false)).toBe("brightfield");
    expect(otherWay("fluorescence", true)).toBe("histology");
    expect(otherWay("histology", true)).toBe("fluorescence");
  });

  it("scores sharp cells of the expected size high, sheets and empty outputs 0", () => {
    const side = 64,
      plane = side * side;
    // One 24-px disc with logit +6 inside, -6 outside.
    const disc = new Uint32Array(plane);
    const logits = new Float32Array(plane).fill(-6);
    for (let y = 0; y < side; y++)
      for (let x = 0; x < side; x++)
        if ((x - 32) ** 2 + (y - 32) ** 2 < 144) {
          disc[y * side + x] = 1;
          logits[y * side + x] = 6;
        }
    expect(scoreWay(logits, disc, 1, 24).score).toBeGreaterThan(0.95);
    // The same foreground, no mask made of it.
    expect(scoreWay(logits, new Uint32Array(plane), 0, 24).score).toBe(0);
    // A mask 3x too small for the diameter is not a cell.
    expect(scoreWay(logits, disc, 1, 80)).toMatchObject({ score: 0, cells: 0 });
    expect(scoreWay(new Float32Array(plane).fill(-6), new Uint32Array(plane), 0, 24).score).toBe(0);
  });
});
