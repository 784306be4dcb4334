import { describe, expect, it } from "vitest";
import { estimateDiameterFromImage } from "../../gpu-runner/engine/diameter.ts";
import { normalizeImage } from "../../gpu-runner/engine/normalize.ts";
import { medianObjectDiameter } from "../../gpu-runner/training/object-diameter.ts";
import { renderInvertedBrightfield } from "./helpers/synthetic-brightfield.ts";
import { renderNuclei } from "./helpers/synthetic-image.ts";
import { discField } from "./helpers/synthetic-labels.ts";

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
