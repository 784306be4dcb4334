import { describe, expect, it } from "vitest";
import { blockMean, blockMeanFromTable, estimateDiameterFromImage, summedAreaTable } from "../../gpu-runner/engine/diameter.ts";
import { firstPassDiameter, HISTOLOGY_FIRST_PASS_FLOOR } from "../../gpu-runner/engine/diameter-guess.ts";
import { normalizeImage } from "../../gpu-runner/engine/normalize.ts";
import { medianObjectDiameter } from "../../gpu-runner/engine/object-diameter.ts";
import { renderInvertedBrightfield } from "./helpers/synthetic-brightfield.ts";
import { renderNuclei } from "../fixtures/image.ts";
import { discField } from "../fixtures/labels.ts";

function normalisedDiscs(radius: number) {
  const size = Math.max(160, Math.round(radius * 14));
  const scene = discField(size, size, 30, radius * 0.9, radius * 1.1, 7);
  const image = renderNuclei(scene);
  normalizeImage(image, undefined, image.data);
  return { plane: image.data, size, trueDiameter: medianObjectDiameter(scene.labels) };
}

describe("estimateDiameterFromImage", () => {
  for (const radius of [5, 10, 20, 40]) {
    it(`recovers the diameter of discs of radius ${radius} px within 15 %`, () => {
      const { plane, size, trueDiameter } = normalisedDiscs(radius);
      const estimate = estimateDiameterFromImage(plane, size, size)!;
      expect(estimate / trueDiameter).toBeGreaterThan(0.85);
      expect(estimate / trueDiameter).toBeLessThan(1.15);
    });
  }

  it("estimates the diameter in an image above a megapixel, reduced by block means first, within 25 %", () => {
    // Discs of radius 9-11 px are 4.5-5.5 px after the 2x reduction; the guess comes out ~16 % high
    // there (it only picks the first pass's scale; the masks then measure the objects).
    const scene = discField(1300, 1100, 300, 9, 11, 5);
    const image = renderNuclei(scene);
    normalizeImage(image, undefined, image.data);
    const estimate = estimateDiameterFromImage(image.data, 1300, 1100)!;
    expect(estimate / medianObjectDiameter(scene.labels)).toBeGreaterThan(0.95);
    expect(estimate / medianObjectDiameter(scene.labels)).toBeLessThan(1.25);
  });

  it("reads the block means of every scale from one summed-area table, partial edge blocks included", () => {
    const width = 37,
      height = 23;
    const plane = { data: Float32Array.from({ length: width * height }, (_, i) => ((i * 7919) % 101) / 100), width, height };
    const table = summedAreaTable(plane);
    for (const factor of [2, 3, 5, 8]) {
      const direct = blockMean(plane, factor),
        fromTable = blockMeanFromTable(plane, table, factor);
      expect([fromTable.width, fromTable.height]).toEqual([Math.ceil(width / factor), Math.ceil(height / factor)]);
      expect([direct.width, direct.height]).toEqual([fromTable.width, fromTable.height]);
      fromTable.data.forEach((value, i) => expect(value).toBeCloseTo(direct.data[i]!, 6));
    }
    // The last block of a row holds 37 - 4·8 = 5 columns: its mean is theirs alone.
    const last = blockMeanFromTable(plane, table, 8).data[4]!;
    let sum = 0;
    for (let y = 0; y < 8; y++) for (let x = 32; x < 37; x++) sum += plane.data[y * width + x]!;
    expect(last).toBeCloseTo(sum / 40, 6);
  });

  describe("counting blobs (brightfield)", () => {
    for (const radius of [5, 10, 20, 40]) {
      it(`recovers the diameter of discs of radius ${radius} px within 20 %`, () => {
        const { plane, size, trueDiameter } = normalisedDiscs(radius);
        const estimate = estimateDiameterFromImage(plane, size, size, { countBlobs: true })!;
        expect(estimate / trueDiameter).toBeGreaterThan(0.8);
        expect(estimate / trueDiameter).toBeLessThan(1.2);
      });
    }

    // The failure seen on dsb2018 brightfield: uneven illumination and texture as strong as the
    // nuclei fill the foreground, and the foreground average rises to the largest scale.
    it("finds small nuclei on an unevenly lit, textured field, where the foreground average fails", () => {
      const scene = discField(512, 512, 150, 4.5, 5.5, 3);
      const image = renderInvertedBrightfield(scene);
      normalizeImage(image, undefined, image.data);
      const trueDiameter = medianObjectDiameter(scene.labels);
      expect(estimateDiameterFromImage(image.data, 512, 512)! / trueDiameter).toBeGreaterThan(5);
      const counted = estimateDiameterFromImage(image.data, 512, 512, { countBlobs: true })!;
      expect(counted / trueDiameter).toBeGreaterThan(0.8);
      expect(counted / trueDiameter).toBeLessThan(1.2);
    });

    it("finds nothing in a flat image", () => {
      expect(estimateDiameterFromImage(new Float32Array(100 * 80), 100, 80, { countBlobs: true })).toBeUndefined();
    });
  });

  it("gives the same answer for the same image (deterministic)", () => {
    const { plane, size } = normalisedDiscs(10);
    expect(estimateDiameterFromImage(plane, size, size)).toBe(estimateDiameterFromImage(plane.slice(), size, size));
  });

  it("finds nothing in a flat image", () => {
    expect(estimateDiameterFromImage(new Float32Array(100 * 80), 100, 80)).toBeUndefined();
  });

  it("rejects a plane whose length does not match its size", () => {
    expect(() => estimateDiameterFromImage(new Float32Array(10), 5, 5)).toThrow(/expected 5x5/);
  });
});

describe("firstPassDiameter", () => {
  it("runs the first pass on stained histology at no less than 0.75 of the model's diameter, where pale nuclei would break into specks", () => {
    expect(firstPassDiameter(6.5, "histology", 24)).toBe(HISTOLOGY_FIRST_PASS_FLOOR * 24);
    expect(HISTOLOGY_FIRST_PASS_FLOOR).toBe(0.75);
  });

  it("keeps a histology guess above the floor, and every guess of other modalities, as it is", () => {
    expect(firstPassDiameter(40, "histology", 24)).toBe(40);
    expect(firstPassDiameter(6.5, "fluorescence", 24)).toBe(6.5);
    expect(firstPassDiameter(6.5, "brightfield", 24)).toBe(6.5);
    expect(firstPassDiameter(6.5, undefined, 24)).toBe(6.5);
  });

  it("leaves an image with no guess to the model's own scale", () => {
    expect(firstPassDiameter(undefined, "histology", 24)).toBeUndefined();
  });
});
