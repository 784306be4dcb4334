import { describe, expect, it } from "vitest";
import { LARGE_IMAGE_PIXELS, MAX_PIXELS_PER_CALL, pixelsPerCall, runNetwork, tileLayout } from "../../gpu-runner/engine/inference.ts";
import { loadModel, loadModelFromBytes, type LoadedModel } from "../../gpu-runner/engine/model.ts";
import { DEFAULT_MODEL_PATH } from "../../gpu-runner/engine/model-choice.ts";
import { normalizeImage } from "../../gpu-runner/engine/normalize.ts";
import { buildReferenceModel } from "../../gpu-runner/engine/reference-model.ts";
import { averagePrecision } from "../../common/scoring/average-precision.ts";
import { segmentImage } from "../../gpu-runner/engine/segment.ts";
import { largeTiles, sizeMultiple, taper, tileStarts } from "../../gpu-runner/engine/tiling.ts";
import { DataType, encodeModel } from "../../gpu-runner/onnx/model-builder.ts";
import { renderNuclei } from "../fixtures/image.ts";
import { discField } from "../fixtures/labels.ts";

describe("tile layout (Cellpose's make_tiles)", () => {
  it("covers the image with evenly spread, overlapping tiles", () => {
    expect(tileStarts(200, 256, 0.1)).toEqual([0]);
    expect(tileStarts(600, 256, 0.1)).toEqual([0, 172, 344]); // ceil(1.2 · 600 / 256) = 3 tiles
    expect(tileStarts(256 * 4, 256, 0.1)).toEqual([0, 192, 384, 576, 768]); // ceil(4.8) = 5 tiles
  });

  it("runs networks that take any input size on large tiles, keeping the training tiles' overlap in pixels", () => {
    expect(sizeMultiple(224)).toBe(32);
    expect(sizeMultiple(256)).toBe(32);
    expect(sizeMultiple(200)).toBe(8);
    // A side up to 1024 px is one tile, rounded up to the multiple (the rest is zero padding).
    expect(largeTiles(1024, 224, 0.1)).toEqual({ tile: 1024, starts: [0] });
    expect(largeTiles(1000, 224, 0.1)).toEqual({ tile: 1024, starts: [0] });
    expect(largeTiles(100, 224, 0.1)).toEqual({ tile: 128, starts: [0] });
    // Longer sides: as few tiles of at most 1024 px as keep neighbours >= 2 · 0.1 · 224 = 45 px apart.
    for (const length of [1025, 1225, 2048, 5000, 8192]) {
      const { tile, starts } = largeTiles(length, 224, 0.1);
      expect(tile % 32).toBe(0);
      expect(tile).toBeLessThanOrEqual(1024);
      expect(starts[0]).toBe(0);
      expect(starts.at(-1)! + tile).toBe(length);
      for (let i = 1; i < starts.length; i++) expect(starts[i - 1]! + tile - starts[i]!).toBeGreaterThanOrEqual(44); // 45 less truncation
      expect(starts.length).toBe(Math.ceil((length - 45) / (1024 - 45)));
    }
    expect(largeTiles(1225, 224, 0.1)).toEqual({ tile: 640, starts: [0, 585] });
    expect(largeTiles(600, 224, 0.1, 256)).toEqual({ tile: 256, starts: [0, 172, 344] });
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
  const width = 560,
    height = 480;
  const scene = discField(width, height, 160, 5, 9, 11);
  const image = renderNuclei(scene);
  const load = async (tileSize: number) => {
    const { onnx, manifest } = buildReferenceModel({ diameter: 12, tileSize });
    return loadModelFromBytes(onnx, manifest, { executionProvider: "cpu", log: () => {} });
  };
  // The reference network takes any input size; seen as a fixed-size one it runs on tiles of exactly tileSize.
  const fixedSize = (model: LoadedModel): LoadedModel => ({ ...model, anyInputSize: false });

  it("gives exactly the one-pass network outputs wherever a single tile covers the image", async () => {
    const input = normalizeImage(image);
    const model = await load(256);
    expect(model.anyInputSize).toBe(true);
    expect(tileLayout(width, height, model)).toEqual({ rows: { tile: 480, starts: [0] }, columns: { tile: 576, starts: [0] } });
    const onePass = await runNetwork(input, 1, width, height, model);
    const tiled = await runNetwork(input, 1, width, height, fixedSize(model), { batchSize: 4 });
    const plane = width * height;
    let worst = 0,
      compared = 0;
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

  it("runs images above LARGE_IMAGE_PIXELS in calls of a quarter of the pixels (onnxruntime keeps a call's activations)", async () => {
    expect(LARGE_IMAGE_PIXELS).toBe(4096 * 4096);
    expect(pixelsPerCall(4096, 4096)).toBe(MAX_PIXELS_PER_CALL);
    expect(pixelsPerCall(4097, 4096)).toBe(MAX_PIXELS_PER_CALL / 4);
    const model = await load(256);
    const tiles = (side: number) => tileLayout(side, side, model);
    expect(tiles(4096).columns.tile).toBe(864); // 5 tiles a side, 1024 px at most
    expect(tiles(8192).columns).toMatchObject({ tile: 512 });
    expect(tiles(8192).columns.starts).toHaveLength(18);
    // An explicit tile side still wins.
    expect(tileLayout(8192, 8192, model, { maxTileSide: 1024 }).columns.tile).toBe(960); // 9 tiles a side
  });

  it("runs a network with fixed H and W on tiles of exactly its tileSize", async () => {
    // A 1x1 convolution to 3 channels whose ONNX input is fixed at 64x64: any other size fails in onnxruntime.
    const onnx = encodeModel({
      name: "fixed",
      inputs: [{ name: "image", type: DataType.FLOAT, shape: ["N", 1, 64, 64] }],
      outputs: [{ name: "output", type: DataType.FLOAT, shape: ["N", 3, 64, 64] }],
      initializers: [{ name: "w", dims: [3, 1, 1, 1], data: Float32Array.from([1, 2, 3]) }],
      nodes: [{ op: "Conv", inputs: ["image", "w"], outputs: ["output"] }],
    });
    const { manifest } = buildReferenceModel({ tileSize: 64 });
    const model = await loadModelFromBytes(onnx, manifest, { executionProvider: "cpu", log: () => {} });
    expect(model.anyInputSize).toBe(false);
    expect(tileLayout(150, 40, model)).toEqual({ rows: { tile: 64, starts: [0] }, columns: { tile: 64, starts: [0, 43, 86] } });
    const input = Float32Array.from({ length: 150 * 40 }, (_, i) => i % 7);
    const output = await runNetwork(input, 1, 150, 40, model);
    for (const c of [0, 1, 2]) for (const i of [0, 77, 150 * 40 - 1]) expect(output[c * 150 * 40 + i]).toBeCloseTo((c + 1) * input[i]!, 5);
  });

  it("mirrors flip-averaged runs back, reversing the mirrored axis's flow: a mirror-symmetric network's outputs are unchanged", async () => {
    // The reference network is mirror-symmetric (Gaussian blur, central differences), so each
    // mirrored run, mirrored back, equals the plain one; a flow component left unreversed would
    // cancel out in the average instead.
    const input = normalizeImage(image);
    for (const model of [await load(256), fixedSize(await load(256))]) {
      const plain = await runNetwork(input, 1, width, height, model, { batchSize: 4 });
      const averaged = await runNetwork(input, 1, width, height, model, { batchSize: 4, flipAverage: true });
      const plane = width * height;
      let worst = 0;
      for (let i = 0; i < plane; i++) {
        const channels = scene.labels[i] ? [0, 1, 2] : [2];
        for (const c of channels) worst = Math.max(worst, Math.abs(plain[c * plane + i]! - averaged[c * plane + i]!));
      }
      expect(worst).toBeLessThan(1e-3);
    }
    const masks = await segmentImage(image, await load(256), { augment: true });
    expect(averagePrecision(scene.labels, masks.labels).ap[0]).toBe(1);
  });

  it("gives the same masks tiled as in one pass", async () => {
    const model = await load(256);
    const onePass = await segmentImage(image, model);
    const tiled = await segmentImage(image, fixedSize(model));
    expect(tiled.rois.length).toBe(onePass.rois.length);
    expect(averagePrecision(onePass.labels, tiled.labels).ap).toEqual([1, 1, 1]);
    expect(averagePrecision(scene.labels, tiled.labels).ap[0]).toBe(1);
  });
});

describe("large tiles with the shipped network", () => {
  // cpsam has symbolic H and W and was trained on 224-px crops. A 1100 x 700 field of nuclei of
  // about its diameter: 1 x 2 large tiles, against 2 x 6 training-size tiles.
  const width = 1100,
    height = 300;
  const scene = discField(width, height, 220, 9, 14, 5);
  const image = renderNuclei(scene);

  it("agrees with training-size tiles: the same flows inside cells, the same masks", async () => {
    const model = await loadModel(DEFAULT_MODEL_PATH, { executionProvider: "cpu", log: () => {} });
    expect(model.anyInputSize).toBe(true);
    expect(tileLayout(width, height, model)).toEqual({ rows: { tile: 320, starts: [0] }, columns: { tile: 576, starts: [0, 524] } });
    const small: LoadedModel = { ...model, anyInputSize: false };
    const input = normalizeImage(image);
    const large = await runNetwork(input, 1, width, height, model);
    const tiles = await runNetwork(input, 1, width, height, small);
    const plane = width * height;
    let flowDifference = 0,
      inside = 0,
      sameSide = 0;
    for (let i = 0; i < plane; i++) {
      if (large[2 * plane + i]! > 0 === tiles[2 * plane + i]! > 0) sameSide++;
      if (!scene.labels[i]) continue;
      inside++;
      flowDifference += Math.hypot(large[i]! - tiles[i]!, large[plane + i]! - tiles[plane + i]!);
    }
    // Flows are 5x unit vectors: a mean difference below 0.25 is under 3 degrees.
    expect(flowDifference / inside).toBeLessThan(0.25);
    expect(sameSide / plane).toBeGreaterThan(0.995);

    const largeMasks = await segmentImage(image, model);
    const tileMasks = await segmentImage(image, small);
    const againstTruth = (labels: Uint32Array) => averagePrecision(scene.labels, labels).ap[0]!;
    expect(averagePrecision(tileMasks.labels, largeMasks.labels).ap[0]).toBeGreaterThan(0.95);
    expect(againstTruth(largeMasks.labels)).toBeGreaterThanOrEqual(againstTruth(tileMasks.labels) - 0.01);
  }, 120_000);
});
