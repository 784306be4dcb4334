// Glass costs nothing (blocks/glass.ts): a block whose model input has no signal is found before
// the network runs, and a block with a single nucleus in it never is.
import { describe, expect, it } from "vitest";
import type { DecodedImage } from "../../common/decode/index.ts";
import { blockIsGlass, GLASS_FOREGROUND_FRACTION, glassBinSide, glassBinsNeeded, isGlass } from "../../gpu-runner/engine/blocks/glass.ts";
import { loadModelFromBytes, MODALITY_COLOUR } from "../../gpu-runner/engine/model.ts";
import { modelInput } from "../../gpu-runner/engine/model-input.ts";
import type { Modality } from "../../gpu-runner/engine/modality.ts";
import { channelBounds } from "../../gpu-runner/engine/normalize.ts";
import type { ChannelBounds } from "../../gpu-runner/engine/normalize.ts";
import { buildReferenceModel } from "../../gpu-runner/engine/reference-model.ts";
import { segmentImage } from "../../gpu-runner/engine/segment.ts";
import { discField } from "../fixtures/labels.ts";
import { syntheticNuclei } from "../fixtures/nuclei-grid.ts";

const ONE_CHANNEL = { channels: 1 };
const COLOUR = { channels: 3, input: MODALITY_COLOUR } as const;

/** Standard normal deviates from a seeded generator (LCG and Box–Muller): the same noise on every run. */
function normalDeviates(seed: number): () => number {
  let state = seed >>> 0;
  const uniform = () => ((state = (state * 1_664_525 + 1_013_904_223) >>> 0) + 1) / (2 ** 32 + 1);
  return () => Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
}

function image(width: number, height: number, channels: number, bitDepth: number, value: (c: number, x: number, y: number) => number): DecodedImage {
  const plane = width * height;
  const data = new Float32Array(channels * plane);
  for (let c = 0; c < channels; c++) for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data[c * plane + y * width + x] = value(c, x, y);
  return { width, height, channels, bitDepth, sampleFormat: "uint", data };
}

/** Glass as a camera records it: a level per channel with Gaussian noise, rounded and clipped to the bit depth. */
function noisyGlass(width: number, height: number, levels: number[], sigma: number, seed: number, bitDepth = 16): DecodedImage {
  const noise = normalDeviates(seed);
  const top = 2 ** bitDepth - 1;
  return image(width, height, levels.length, bitDepth, (c) => Math.min(top, Math.max(0, Math.round(levels[c]! + sigma * noise()))));
}

/**
 * A nucleus of `diameter` centred at (cx, cy), soft-edged as the nuclei fixture's: each channel
 * moves from its value towards `inside` by the logistic of the distance to the edge.
 */
function addDisc(target: DecodedImage, cx: number, cy: number, diameter: number, inside: number[]): DecodedImage {
  const { width, height, channels } = target;
  const data = target.data.slice();
  const plane = width * height;
  const r = diameter / 2;
  for (let y = Math.max(0, Math.floor(cy - r - 3)); y < Math.min(height, Math.ceil(cy + r + 3)); y++) {
    for (let x = Math.max(0, Math.floor(cx - r - 3)); x < Math.min(width, Math.ceil(cx + r + 3)); x++) {
      const weight = 1 / (1 + Math.exp((Math.hypot(x + 0.5 - cx, y + 0.5 - cy) - r) * 1.5));
      for (let c = 0; c < channels; c++) {
        const i = c * plane + y * width + x;
        data[i] = Math.round(data[i]! + weight * (inside[c]! - data[i]!));
      }
    }
  }
  return { ...target, data };
}

/** The survey's bounds (image-survey.ts): percentiles of the model input made from a sample for the modality. */
function surveyBounds(sample: DecodedImage, model: { channels: number; input?: typeof MODALITY_COLOUR }, modality: Modality): ChannelBounds {
  return channelBounds(modelInput(sample, model, undefined, modality).image);
}

/**
 * A 16-bit fluorescence survey sample: a grid of nuclei of diameter 22 (nuclei-grid.ts: 300 + up to
 * `amplitude`) beside as much glass at 300, all under camera noise of `sigma`.
 */
function fluorescenceSample(amplitude: number, sigma: number): DecodedImage {
  const side = 512;
  const tissue = syntheticNuclei(side, side, 40, 11).data;
  const noise = normalDeviates(7);
  return image(2 * side, side, 1, 16, (_, x, y) => {
    const clean = x < side ? 300 + ((tissue[y * side + x]! - 300) * amplitude) / 3000 : 300;
    return Math.max(0, Math.round(clean + sigma * noise()));
  });
}

/** Pixels of the model input above the foreground level: the first draft's count, single pixels without bins. */
function pixelsAboveLevel(input: DecodedImage, bounds: ChannelBounds): number {
  const level = bounds.low[0]! + GLASS_FOREGROUND_FRACTION * (bounds.high[0]! - bounds.low[0]!);
  return input.data.reduce((n, v) => n + (v > level ? 1 : 0), 0);
}

describe("glass: blocks with no signal", () => {
  it("calls blocks of zeros glass, 8-bit and 16-bit, under their own flat bounds and under a slide's", () => {
    const slide = surveyBounds(fluorescenceSample(3000, 20), ONE_CHANNEL, "fluorescence");
    for (const bitDepth of [8, 16]) {
      const zeros = image(1024, 1024, 1, bitDepth, () => 0);
      const input = modelInput(zeros, ONE_CHANNEL, undefined, "fluorescence").image;
      expect(channelBounds(input)).toEqual({ low: [0], high: [0] });
      expect(isGlass(input, channelBounds(input), 30)).toBe(true);
      expect(isGlass(input, slide, 22)).toBe(true);
      expect(blockIsGlass(zeros, ONE_CHANNEL, undefined, "fluorescence", { low: [0], high: [0] }, 30)).toBe(true);
      // Every modality makes zeros dark: inverted, zeros are the block's brightest and read as 0.
      for (const modality of ["brightfield", "histology"] as const)
        expect(blockIsGlass(zeros, COLOUR, undefined, modality, { low: [0, 0, 0], high: [0, 0, 0] }, 30)).toBe(true);
    }
  });

  it("calls a uniform non-zero block glass (a flat image: its bounds coincide at its level)", () => {
    for (const [bitDepth, level] of [
      [8, 128],
      [16, 1000],
    ] as const) {
      const flat = image(512, 512, 1, bitDepth, () => level);
      const input = modelInput(flat, ONE_CHANNEL, undefined, "fluorescence").image;
      expect(channelBounds(input)).toEqual({ low: [level], high: [level] });
      expect(isGlass(input, channelBounds(input), 30)).toBe(true);
      // A bright flat field under brightfield is inverted to nothing at all.
      expect(blockIsGlass(flat, ONE_CHANNEL, undefined, "brightfield", { low: [0], high: [0] }, 30)).toBe(true);
    }
  });

  it("calls noisy glass glass at realistic camera noise, on a bright slide and on a dim one where single pixels cross the foreground level", () => {
    // 16-bit fluorescence: dark level 300 with noise of 20; nuclei 3000 (bright) or 400 (dim, a
    // signal-to-noise ratio of 20) above it.
    for (const amplitude of [3000, 400]) {
      const bounds = surveyBounds(fluorescenceSample(amplitude, 20), ONE_CHANNEL, "fluorescence");
      for (const seed of [1, 2]) {
        const glass = noisyGlass(1024, 1024, [300], 20, seed);
        expect(blockIsGlass(glass, ONE_CHANNEL, undefined, "fluorescence", bounds, 22)).toBe(true);
      }
    }
    // On the dim slide the level is about 3 standard deviations of the noise above the glass: single
    // pixels cross it by the hundred in a block (more than a quarter of a nucleus's area), bins of 2²
    // halve the noise and none does.
    const dim = surveyBounds(fluorescenceSample(400, 20), ONE_CHANNEL, "fluorescence");
    const glass = modelInput(noisyGlass(1024, 1024, [300], 20, 1), ONE_CHANNEL, undefined, "fluorescence").image;
    expect(pixelsAboveLevel(glass, dim)).toBeGreaterThan((Math.PI / 16) * 22 ** 2);
    expect(isGlass(glass, dim, 22)).toBe(true);

    // 8-bit RGB brightfield-like glass with the noise of a compressed scan, on an H&E slide's bounds.
    for (const [model, seed] of [
      [ONE_CHANNEL, 4],
      [COLOUR, 5],
    ] as const) {
      const bounds = surveyBounds(stainedSample(), model, "histology");
      const white = noisyGlass(1024, 1024, [242, 240, 245], 3, seed, 8);
      expect(blockIsGlass(white, model, undefined, "histology", bounds, 24)).toBe(true);
    }
  });

  it("calls glass with scattered hot pixels glass: a value counts up to the survey's upper bound only", () => {
    const bounds = surveyBounds(fluorescenceSample(3000, 20), ONE_CHANNEL, "fluorescence");
    const glass = noisyGlass(1024, 1024, [300], 20, 9);
    const next = normalDeviates(11);
    for (let k = 0; k < 200; k++) glass.data[Math.floor(Math.abs(next() * 1e6)) % glass.data.length] = 65_535;
    expect(blockIsGlass(glass, ONE_CHANNEL, undefined, "fluorescence", bounds, 30)).toBe(true);
  });
});

describe("glass: a nucleus is never skipped", () => {
  it("keeps a block with one nucleus of the diameter on black, under a slide's bounds and under flat ones", () => {
    const black = image(512, 512, 1, 8, () => 0);
    const one = addDisc(black, 300.3, 140.7, 30, [200]);
    expect(blockIsGlass(one, ONE_CHANNEL, undefined, "fluorescence", { low: [0], high: [200] }, 30)).toBe(false);
    // A survey that saw only black: anything above it is foreground.
    expect(blockIsGlass(one, ONE_CHANNEL, undefined, "fluorescence", { low: [0], high: [0] }, 30)).toBe(false);
    // In a corner, where the bins at the block's edges are cut short.
    expect(blockIsGlass(addDisc(black, 497, 498, 30, [200]), ONE_CHANNEL, undefined, "fluorescence", { low: [0], high: [200] }, 30)).toBe(false);
  });

  it("keeps a block with one nucleus on noisy glass, bright or dim", () => {
    for (const amplitude of [3000, 400]) {
      const bounds = surveyBounds(fluorescenceSample(amplitude, 20), ONE_CHANNEL, "fluorescence");
      const glass = noisyGlass(1024, 1024, [300], 20, 3);
      expect(blockIsGlass(addDisc(glass, 611.5, 802.25, 22, [300 + amplitude]), ONE_CHANNEL, undefined, "fluorescence", bounds, 22)).toBe(false);
    }
  });

  it("keeps a block with one object of half the diameter, foreground throughout, wherever it lies on the bins", () => {
    const bounds = { low: [0], high: [100] };
    for (const diameter of [6, 8, 12, 15, 16, 22, 24, 30, 57, 100]) {
      const side = glassBinSide(diameter);
      const r = diameter / 4;
      const extent = Math.ceil(2 * r + 4 * side + 4);
      const base = side * Math.ceil((r + 2) / side);
      const block = image(extent, extent, 1, 8, () => 0);
      const step = diameter < 16 ? 0.125 : 0.25;
      for (let ox = 0; ox < side; ox += step) {
        for (let oy = 0; oy < side; oy += step) {
          block.data.fill(0);
          const cx = base + ox,
            cy = base + oy;
          for (let y = 0; y < extent; y++)
            for (let x = 0; x < extent; x++) if ((x + 0.5 - cx) ** 2 + (y + 0.5 - cy) ** 2 <= r * r) block.data[y * extent + x] = 100;
          if (isGlass(block, bounds, diameter)) throw new Error(`a disc of diameter ${diameter / 2} at (${cx}, ${cy}) was called glass`);
        }
      }
    }
    expect(glassBinsNeeded(30)).toBe(4);
    expect(glassBinsNeeded(6)).toBe(1);
  });
});

/**
 * An 8-bit H&E survey sample: tissue (eosin pink with haematoxylin-purple nuclei of diameter 20 to
 * 28) beside as much white glass, under the noise of a compressed scan.
 */
function stainedSample(): DecodedImage {
  const side = 256;
  const nuclei = discField(side, side, 30, 10, 14, 3).labels;
  const noise = normalDeviates(13);
  const eosin = [225, 150, 190],
    haematoxylin = [110, 60, 150],
    glass = [242, 240, 245];
  return image(2 * side, side, 3, 8, (c, x, y) => {
    const clean = x >= side ? glass[c]! : nuclei[y * side + x] !== 0 ? haematoxylin[c]! : eosin[c]!;
    return Math.min(255, Math.max(0, Math.round(clean + 3 * noise())));
  });
}

describe("glass: H&E through the stained modality's model input", () => {
  for (const [name, model] of [
    ["a one-channel model (the inverted mean)", ONE_CHANNEL],
    ["a colour model (each plane inverted)", COLOUR],
  ] as const) {
    it(`calls white glass glass and a block with one purple nucleus not, for ${name}`, () => {
      const bounds = surveyBounds(stainedSample(), model, "histology");
      const white = noisyGlass(512, 512, [242, 240, 245], 3, 21, 8);
      expect(blockIsGlass(white, model, undefined, "histology", bounds, 24)).toBe(true);
      const nucleus = addDisc(white, 200.5, 333.5, 24, [110, 60, 150]);
      expect(blockIsGlass(nucleus, model, undefined, "histology", bounds, 24)).toBe(false);
      // Stroma without a nucleus is tissue too: it is never skipped.
      const stroma = addDisc(white, 200.5, 333.5, 60, [225, 150, 190]);
      expect(blockIsGlass(stroma, model, undefined, "histology", bounds, 24)).toBe(false);
    });
  }
});

describe("glass: what the test refuses or cannot read", () => {
  it("refuses bounds for another number of channels and a diameter that is no size", () => {
    const block = image(64, 64, 3, 8, () => 0);
    expect(() => isGlass(block, { low: [0], high: [1] }, 30)).toThrow(/bounds for 1 channels, the model input has 3/);
    expect(() =>
      isGlass(
        image(8, 8, 1, 8, () => 0),
        { low: [0], high: [1] },
        0,
      ),
    ).toThrow(/diameter/);
    expect(() =>
      isGlass(
        image(8, 8, 1, 8, () => 0),
        { low: [0], high: [1] },
        Number.NaN,
      ),
    ).toThrow(/diameter/);
  });

  it("never calls glass a block it cannot read: NaN pixels count as bright, NaN bounds judge nothing", () => {
    const block = image(64, 64, 1, 32, () => 0);
    for (const i of [100, 300, 2000, 4000]) block.data[i] = Number.NaN;
    expect(isGlass(block, { low: [0], high: [1] }, 8)).toBe(false);
    expect(
      isGlass(
        image(64, 64, 1, 32, () => 0),
        { low: [Number.NaN], high: [Number.NaN] },
        30,
      ),
    ).toBe(false);
    expect(
      isGlass(
        image(0, 0, 1, 8, () => 0),
        { low: [0], high: [1] },
        30,
      ),
    ).toBe(true);
  });
});

describe("glass: what the network finds in what is skipped", () => {
  it("skips the blocks the network finds nothing in, and runs it once on the model input the test read", async () => {
    const { onnx, manifest } = buildReferenceModel({ diameter: 22, channels: 1, tileSize: 128 });
    const model = await loadModelFromBytes(onnx, manifest, { executionProvider: "cpu", log: () => {} });
    const bounds = surveyBounds(fluorescenceSample(400, 20), ONE_CHANNEL, "fluorescence");
    const glass = noisyGlass(256, 256, [300], 20, 5);
    const blocks = [
      { block: image(256, 256, 1, 16, () => 0), cells: 0 },
      { block: glass, cells: 0 },
      { block: addDisc(glass, 100.5, 140.5, 22, [700]), cells: 1 },
    ];
    for (const { block, cells } of blocks) {
      // As a block loop would: the model input made once, tested, and handed to the network as prepared.
      const { image: input, modality } = modelInput(block, model.manifest, undefined, "fluorescence");
      const result = await segmentImage(input, model, { diameter: 22 }, { normalization: bounds, preparedFor: modality!.modality });
      expect(result.rois.length).toBe(cells);
      expect(isGlass(input, bounds, 22)).toBe(cells === 0);
      // The same cells as from the block itself.
      expect((await segmentImage(block, model, { diameter: 22, modality: "fluorescence" }, { normalization: bounds })).rois).toEqual(result.rois);
    }
  });
});
