import { describe, expect, it } from "vitest";
import type { DecodedImage } from "../../common/decode/index.ts";
import { modelInput } from "../../gpu-runner/engine/model-input.ts";
import { detectModality } from "../../common/modality.ts";
import { modalityChannel, readModality } from "../../gpu-runner/engine/modality.ts";

// A 64x64 field with one disc of radius 12 in the middle: `nucleus` and `background` give each
// pixel's channel values, with a little deterministic texture so percentiles are not degenerate.
function field(channels: number, nucleus: number[], background: number[], bitDepth = 8): DecodedImage {
  const width = 64,
    height = 64,
    plane = width * height;
  const data = new Float32Array(channels * plane);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const inside = (x - 32) ** 2 + (y - 32) ** 2 < 144;
      const texture = ((x * 7 + y * 13) % 5) - 2;
      for (let c = 0; c < channels; c++) data[c * plane + y * width + x] = (inside ? nucleus : background)[c]! + texture;
    }
  }
  return { width, height, channels, bitDepth, sampleFormat: "uint", data };
}
const centre = 32 * 64 + 32,
  corner = 2 * 64 + 2;

const fluorescence = field(1, [200], [12]);
const brightfield = field(1, [90], [225]);
// H&E-like: a pink (eosin) background and purple-blue (haematoxylin) nuclei, as RGB.
const stained = field(3, [90, 60, 150], [230, 170, 200]);
// A gray image stored as RGB (all channels equal), dark nuclei on a bright field.
const grayAsRgb = field(3, [90, 90, 90], [225, 225, 225]);

describe("detecting the modality from the pixels", () => {
  it("calls dark backgrounds fluorescence, bright gray fields brightfield and bright coloured fields histology", () => {
    expect(detectModality(fluorescence)).toBe("fluorescence");
    expect(detectModality(brightfield)).toBe("brightfield");
    expect(detectModality(stained)).toBe("histology");
    expect(detectModality(grayAsRgb)).toBe("brightfield");
  });

  it("keeps a dim, nearly empty fluorescence field (median above the middle of a narrow range) as fluorescence", () => {
    // BBBC039 has fields like this: background 130-170 of a 12-bit range, one faint nucleus.
    expect(detectModality(field(1, [175], [150], 16))).toBe("fluorescence");
  });

  it("calls a flat image fluorescence (nothing to invert)", () => {
    expect(detectModality(field(1, [50], [50]))).toBe("fluorescence");
  });
});

/** A 96x96 RGB scene: `colourAt` gives each pixel's colour (before a little deterministic texture). */
function scene(colourAt: (x: number, y: number) => number[]): DecodedImage {
  const width = 96,
    height = 96,
    plane = width * height;
  const data = new Float32Array(3 * plane);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const texture = ((x * 7 + y * 13) % 5) - 2;
      colourAt(x, y).forEach((v, c) => (data[c * plane + y * width + x] = Math.max(0, Math.min(255, v + texture))));
    }
  return { width, height, channels: 3, bitDepth: 8, sampleFormat: "uint", data };
}
/** Whether (x, y) lies in one of the nuclei of a dense grid (radius r, spacing 16). */
const inNucleus = (x: number, y: number, r: number) => ((x % 16) - 8) ** 2 + ((y % 16) - 8) ** 2 < r * r;

describe("deciding the modality of coloured images by how their colour arises", () => {
  const cases: [string, DecodedImage, string][] = [
    // Tissue packed with dark nuclei and no glass: the median is low, as in fluorescence.
    ["dense H&E, no glass", scene((x, y) => (inNucleus(x, y, 7) ? [70, 45, 120] : [200, 120, 170])), "histology"],
    ["pale H&E, mostly glass", scene((x, y) => (inNucleus(x, y, 4) ? [185, 160, 215] : x < 48 ? [245, 240, 245] : [240, 215, 230])), "histology"],
    [
      "IHC: brown DAB and blue haematoxylin nuclei on a light field",
      scene((x, y) => (inNucleus(x, y, 5) ? (x < 48 ? [140, 90, 50] : [80, 90, 160]) : [235, 232, 228])),
      "histology",
    ],
    ["a DAPI-blue RGB", scene((x, y) => (inNucleus(x, y, 5) ? [10, 25, 210] : [2, 3, 8])), "fluorescence"],
    [
      "a multi-colour composite",
      scene((x, y) => (inNucleus(x, y, 5) ? (y < 48 ? [20, 30, 220] : [30, 200, 40]) : x % 24 < 3 ? [180, 20, 20] : [4, 4, 6])),
      "fluorescence",
    ],
    ["a bright field with a yellow lamp", scene((x, y) => (inNucleus(x, y, 5) ? [110, 104, 88] : [228, 218, 186])), "brightfield"],
  ];
  for (const [name, image, expected] of cases) {
    it(`reads ${name} as ${expected}, and says why`, () => {
      const reading = readModality(image);
      expect(reading.modality).toBe(expected);
      expect(reading.sure).toBe(true);
      expect(reading.reason).toMatch(/correlate at -?\d\.\d\d/);
    });
  }

  it("gives the dense tissue the old rule took for fluorescence (background under 0.4 of the range) to histology", () => {
    const dense = cases[0]![1];
    expect(readModality(dense).reason).toMatch(/^stained tissue: light passes everywhere/);
  });
});

describe("the one channel a nuclei model reads", () => {
  it("is bright on nuclei and dark on the background, whatever the modality", () => {
    for (const [image, modality] of [
      [fluorescence, "fluorescence"],
      [brightfield, "brightfield"],
      [stained, "histology"],
    ] as const) {
      const channel = modalityChannel(image, modality);
      expect(channel[centre]!, modality).toBeGreaterThan(channel[corner]! + 0.1 * Math.abs(channel[centre]!));
    }
  });

  it("for brightfield and histology is the inverted channel mean, for fluorescence the mean itself", () => {
    const mean = (image: DecodedImage, i: number) => [0, 1, 2].slice(0, image.channels).reduce((sum, c) => sum + image.data[c * 4096 + i]!, 0) / image.channels;
    const fluorescenceChannel = modalityChannel(fluorescence, "fluorescence");
    expect(fluorescenceChannel[centre]).toBeCloseTo(mean(fluorescence, centre), 4);
    const histologyChannel = modalityChannel(stained, "histology");
    const brightest = Math.max(...Array.from({ length: 4096 }, (_, i) => mean(stained, i)));
    expect(histologyChannel[centre]).toBeCloseTo(brightest - mean(stained, centre), 4);
  });

  it("is made automatically by default and records how the modality was decided", () => {
    const auto = modelInput(stained, { channels: 1 }, undefined);
    expect(auto.modality).toEqual({ modality: "histology", source: "detected", reason: expect.any(String) });
    expect(auto.image.channels).toBe(1);
    const given = modelInput(stained, { channels: 1 }, undefined, "brightfield");
    expect(given.modality).toEqual({ modality: "brightfield", source: "given" });
    expect(given.image.data[centre]!).toBeGreaterThan(given.image.data[corner]!);
  });

  it("applies to the selected channels: a selected single channel of a stained image reads as brightfield", () => {
    expect(modelInput(stained, { channels: 1 }, [1]).modality?.modality).toBe("brightfield");
    expect(() => modelInput(stained, { channels: 1 }, [3])).toThrow(/channel 3 does not exist/);
  });

  it("leaves models of several channels their channels as they are", () => {
    const two = modelInput(stained, { channels: 2 }, [2, 0]);
    expect(two.modality).toBeUndefined();
    expect(two.image.channels).toBe(2);
    expect(two.image.data[centre]).toBe(stained.data[2 * 4096 + centre]);
    expect(() => modelInput(stained, { channels: 2 }, undefined, "histology")).toThrow(/one-channel and colour models/);
  });
});

describe("the three planes a colour model reads (manifest input modality-colour)", () => {
  const colourModel = { channels: 3, input: "modality-colour" } as const;
  const planes = (data: Float32Array, i: number) => [0, 1, 2].map((c) => data[c * 4096 + i]!);

  it("on gray fluorescence: the one-channel model's channel, repeated in all three", () => {
    const input = modelInput(fluorescence, colourModel, undefined);
    expect(input.modality).toEqual({ modality: "fluorescence", source: "detected", reason: expect.any(String) });
    expect(input.image.channels).toBe(3);
    const channel = modelInput(fluorescence, { channels: 1 }, undefined).image.data;
    for (const i of [centre, corner]) expect(planes(input.image.data, i)).toEqual([channel[i], channel[i], channel[i]]);
  });

  it("on gray brightfield: the inverted gray repeated, nuclei bright", () => {
    const input = modelInput(brightfield, colourModel, undefined);
    expect(input.modality).toEqual({ modality: "brightfield", source: "detected", reason: expect.any(String) });
    const channel = modalityChannel(brightfield, "brightfield");
    expect(planes(input.image.data, centre)).toEqual([channel[centre], channel[centre], channel[centre]]);
    expect(input.image.data[centre]!).toBeGreaterThan(input.image.data[corner]!);
  });

  it("on a stained RGB image: R, G and B each inverted on its own, so nuclei are bright in all three and the stain's colour survives", () => {
    const input = modelInput(stained, colourModel, undefined);
    expect(input.modality).toEqual({ modality: "histology", source: "detected", reason: expect.any(String) });
    for (let c = 0; c < 3; c++) {
      const source = stained.data.subarray(c * 4096, (c + 1) * 4096);
      const brightest = Math.max(...source);
      expect(input.image.data[c * 4096 + centre]).toBe(brightest - source[centre]!);
      expect(input.image.data[c * 4096 + centre]!).toBeGreaterThan(input.image.data[c * 4096 + corner]!);
    }
    // Colour kept: the nuclei (90, 60, 150) against the background (230, 170, 200) lose most red, least blue.
    const [r, g, b] = planes(input.image.data, centre).map((v, c) => v - planes(input.image.data, corner)[c]!);
    expect(r!).toBeGreaterThan(g!);
    expect(g!).toBeGreaterThan(b!);
  });

  it("takes a given modality, records it as given, and reads a gray image forced to histology as the inverted gray repeated", () => {
    const input = modelInput(brightfield, colourModel, undefined, "histology");
    expect(input.modality).toEqual({ modality: "histology", source: "given" });
    const inverted = modalityChannel(brightfield, "brightfield");
    expect(planes(input.image.data, centre)).toEqual([inverted[centre], inverted[centre], inverted[centre]]);
  });

  it("reads the user's selected channels first: one selected channel of a stained image is gray, so brightfield", () => {
    const input = modelInput(stained, colourModel, [1]);
    expect(input.modality?.modality).toBe("brightfield");
    const green = stained.data.subarray(4096, 8192);
    expect(input.image.data[2 * 4096 + centre]).toBe(Math.max(...green) - green[centre]!);
  });
});
