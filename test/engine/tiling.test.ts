import { describe, expect, it } from "vitest";
import { runNetwork } from "../../gpu-runner/engine/inference.ts";
import { loadModelFromBytes } from "../../gpu-runner/engine/model.ts";
import { normalizeImage } from "../../gpu-runner/engine/normalize.ts";
import { buildReferenceModel } from "../../gpu-runner/engine/reference-model.ts";
import { averagePrecision } from "../../gpu-runner/engine/average-precision.ts";
import { segmentImage } from "../../gpu-runner/engine/segment.ts";
import { taper, tileStarts } from "../../gpu-runner/engine/tiling.ts";
import { renderNuclei } from "./helpers/synthetic-image.ts";
import { discField } from "./helpers/synthetic-labels.ts";

describe("tile layout (Cellpose's make_tiles)", () => {
  it("covers the image with evenly spread, overlapping tiles", () => {
    expect(tileStarts(200, 256, 0.1)).toEqual([0]);
    expect(tileStarts(600, 256, 0.1)).toEqual([0, 172, 344]); // ceil(1.2 · 600 / 256) = 3 tiles
    expect(tileStarts(256 * 4, 256, 0.1)).toEqual([0, 192, 384, 576, 768]); // ceil(4.8) = 5 tiles
  });

  it("weights tile centres fully and edges little, symmetrically", () => {
    const w = taper(256);
    expect(w.length).toBe(256);
    expect(w[128]).toBeCloseTo(1, 4);
    expect(w[0]).toBeLessThan(0.1);
    for (let i = 0; i < 256; i++) expect(w[i]).toBeCloseTo(w[255 - i]!, 6);
  });
});

describe("tiled inference", () => {
  // 560 x 480 with 256-px tiles: tiles start at x = 0, 152, 304 and y = 0, 112, 224.
  const width = 560, height = 480;
  const scene = discField(width, height, 160, 5, 9, 11);
  const image = renderNuclei(scene);
  const load = (tileSize: number) => {
    const { onnx, manifest } = buildReferenceModel({ diameter: 12, tileSize });
    return loadModelFromBytes(onnx, manifest, { executionProvider: "cpu", log: () => {} });
  };

  it("gives exactly the one-pass network outputs wherever a single tile covers the image", async () => {
    const input = normalizeImage(image);
    const onePass = await runNetwork(input, 1, width, height, await load(640));
    const tiled = await runNetwork(input, 1, width, height, await load(256), { batchSize: 4 });
    const plane = width * height;
    let worst = 0, compared = 0;
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const singleX = x < 152 || (x >= 256 && x < 304) || x >= 408;
        const singleY = y < 112 || y >= 368;
        if (!singleX || !singleY) continue;
        compared++;
        // Flows are unit gradients scaled by 5: on flat background their direction is rounding
        // noise (different convolution algorithms per input size), so compare them inside cells.
        const channels = scene.labels[y * width + x] ? [0, 1, 2] : [2];
        for (const c of channels) worst = Math.max(worst, Math.abs(onePass[c * plane + y * width + x]! - tiled[c * plane + y * width + x]!));
      }
    }
    expect(compared).toBeGreaterThan(0.1 * plane);
    expect(worst).toBeLessThan(1e-4);
  });

  it("gives the same masks tiled as in one pass", async () => {
    const onePass = await segmentImage(image, await load(640));
    const tiled = await segmentImage(image, await load(256));
    expect(tiled.rois.length).toBe(onePass.rois.length);
    expect(averagePrecision(onePass.labels, tiled.labels).ap).toEqual([1, 1, 1]);
    expect(averagePrecision(scene.labels, tiled.labels).ap[0]).toBe(1);
  });
});
