// Augmented crops keep image, mask and flow targets consistent under rotation, mirroring and zoom.
import { describe, expect, it } from "vitest";
import { flowsFromLabels } from "../../gpu-runner/engine/flow-targets.ts";
import { CELLPOSE_AUGMENTATION, MICROSCOPE_AUGMENTATION, sampleCrop } from "../../gpu-runner/training/augment.ts";
import type { AugmentSettings, PreparedImage } from "../../gpu-runner/training/augment.ts";
import { SeededRandom } from "../../gpu-runner/training/random.ts";

/** One bright disc of radius 12 centred in a 64x64 image. */
function disc(): PreparedImage {
  const size = 64;
  const labels = new Uint32Array(size * size);
  const image = new Float32Array(size * size);
  for (let y = 0; y < size; y++)
    for (let x = 0; x < size; x++) {
      if (Math.hypot(x + 0.5 - 32, y + 0.5 - 32) < 12) {
        labels[y * size + x] = 1;
        image[y * size + x] = 1;
      }
    }
  return {
    id: "test/disc",
    width: size,
    height: size,
    channels: 1,
    image,
    flows: flowsFromLabels(labels, size, size),
    foreground: Uint8Array.from(labels),
    scaleToModel: 1,
  };
}

describe("random crops", () => {
  it("rotate and mirror flow vectors with the pixels: they still point to the object's centre", () => {
    const size = 48;
    const random = new SeededRandom(3);
    for (let trial = 0; trial < 8; trial++) {
      const images = new Float32Array(size * size),
        targets = new Float32Array(3 * size * size);
      sampleCrop(disc(), size, random, { ...CELLPOSE_AUGMENTATION, gainRange: [1, 1], offsetRange: [0, 0] }, images, targets, 0);
      const plane = size * size;
      let cx = 0,
        cy = 0,
        n = 0;
      for (let i = 0; i < plane; i++)
        if (targets[2 * plane + i]) {
          cx += (i % size) + 0.5;
          cy += Math.floor(i / size) + 0.5;
          n++;
        }
      if (n < 100) continue; // the crop missed most of the disc
      cx /= n;
      cy /= n;
      let agreement = 0,
        counted = 0;
      for (let i = 0; i < plane; i++) {
        if (!targets[2 * plane + i]) continue;
        const toCentreX = cx - ((i % size) + 0.5),
          toCentreY = cy - (Math.floor(i / size) + 0.5);
        const distance = Math.hypot(toCentreX, toCentreY);
        if (distance < 4) continue;
        // targets holds three planes: flow y, flow x, foreground.
        agreement += (targets[i]! * toCentreY + targets[plane + i]! * toCentreX) / distance;
        counted++;
      }
      expect(agreement / counted).toBeGreaterThan(0.9);
    }
  });

  it("keep the image and the foreground mask aligned", () => {
    const size = 48;
    const images = new Float32Array(size * size),
      targets = new Float32Array(3 * size * size);
    sampleCrop(disc(), size, new SeededRandom(9), { ...CELLPOSE_AUGMENTATION, gainRange: [1, 1], offsetRange: [0, 0] }, images, targets, 0);
    let agree = 0,
      total = 0;
    for (const [i, value] of images.entries()) {
      if (value > 0.05 && value < 0.95) continue; // bilinear edge pixels
      total++;
      if (value >= 0.95 === (targets[2 * size * size + i] === 1)) agree++;
    }
    expect(agree / total).toBeGreaterThan(0.98);
  });
});

describe("intensity changes of real microscopes", () => {
  it("apply a gamma curve and noise only when the settings ask for them", () => {
    const size = 32,
      plane = size * size;
    const crop = (settings: typeof CELLPOSE_AUGMENTATION) => {
      const images = new Float32Array(plane),
        targets = new Float32Array(3 * plane);
      sampleCrop(disc(), size, new SeededRandom(5), { ...settings, zoomRange: 0, gainRange: [1, 1], offsetRange: [0, 0] }, images, targets, 0);
      return images;
    };
    const plain = crop(CELLPOSE_AUGMENTATION);
    expect(crop({ ...CELLPOSE_AUGMENTATION, gammaRange: [1, 1], noiseRange: [0, 0] })).toEqual(plain);
    // Gamma 2 squares every value: the disc's inside (1) stays, its soft edge darkens.
    const squared = crop({ ...CELLPOSE_AUGMENTATION, gammaRange: [2, 2] });
    plain.forEach((v, i) => expect(squared[i]).toBeCloseTo(v * v, 5));
    // Noise of standard deviation 0.1 leaves the mean and adds that much spread.
    const noisy = crop({ ...CELLPOSE_AUGMENTATION, noiseRange: [0.1, 0.1] });
    const differences = Array.from(noisy, (v, i) => v - plain[i]!);
    const mean = differences.reduce((a, b) => a + b, 0) / plane;
    const sd = Math.sqrt(differences.reduce((a, b) => a + (b - mean) ** 2, 0) / plane);
    expect(Math.abs(mean)).toBeLessThan(0.02);
    expect(sd).toBeGreaterThan(0.08);
    expect(sd).toBeLessThan(0.12);
  });
});

describe("colour crops (3 channels)", () => {
  /** The disc, a horizontal ramp and an inverted disc as the three channels: each plane different. */
  function colourDisc(): PreparedImage {
    const one = disc();
    const plane = one.width * one.height;
    const image = new Float32Array(3 * plane);
    for (let i = 0; i < plane; i++) {
      image[i] = one.image[i]!;
      image[plane + i] = (i % one.width) / one.width;
      image[2 * plane + i] = 1 - one.image[i]!;
    }
    return { ...one, channels: 3, image };
  }
  const planeOf = (source: PreparedImage, c: number): PreparedImage => {
    const plane = source.width * source.height;
    return { ...source, channels: 1, image: source.image.slice(c * plane, (c + 1) * plane) };
  };

  it("warp every plane with the crop's one geometry: each plane is the crop its channel alone would give", () => {
    const size = 40,
      plane = size * size;
    const colour = colourDisc();
    for (const seed of [1, 2, 3]) {
      const images = new Float32Array(2 * 3 * plane),
        targets = new Float32Array(2 * 3 * plane);
      sampleCrop(colour, size, new SeededRandom(seed), CELLPOSE_AUGMENTATION, images, targets, 1);
      for (let c = 0; c < 3; c++) {
        const alone = new Float32Array(plane),
          aloneTargets = new Float32Array(3 * plane);
        sampleCrop(planeOf(colour, c), size, new SeededRandom(seed), CELLPOSE_AUGMENTATION, alone, aloneTargets, 0);
        expect(images.subarray((3 + c) * plane, (4 + c) * plane)).toEqual(alone);
        expect(targets.subarray(3 * plane)).toEqual(aloneTargets);
      }
      expect(images.subarray(0, 3 * plane).every((v) => v === 0)).toBe(true); // batch item 0 untouched
    }
  });

  it("get a gain per channel within the microscope augmentation's ±10 %, and one-channel crops none", () => {
    const size = 32,
      plane = size * size;
    const settings: AugmentSettings = {
      ...MICROSCOPE_AUGMENTATION,
      zoomRange: 0,
      gainRange: [1, 1],
      offsetRange: [0, 0],
      gammaRange: undefined,
      noiseRange: undefined,
    };
    const gray = disc();
    const threeGray: PreparedImage = { ...gray, channels: 3, image: new Float32Array([...gray.image, ...gray.image, ...gray.image]) };
    const ratios: number[] = [];
    for (const seed of [4, 5, 6]) {
      const images = new Float32Array(3 * plane),
        targets = new Float32Array(3 * plane);
      sampleCrop(threeGray, size, new SeededRandom(seed), settings, images, targets, 0);
      const plain = new Float32Array(plane);
      sampleCrop(gray, size, new SeededRandom(seed), { ...settings, channelGainRange: undefined }, plain, new Float32Array(3 * plane), 0);
      const brightest = plain.indexOf(Math.max(...plain));
      for (let c = 0; c < 3; c++) {
        const ratio = images[c * plane + brightest]! / plain[brightest]!;
        expect(ratio).toBeGreaterThanOrEqual(0.9);
        expect(ratio).toBeLessThanOrEqual(1.1);
        // The same gain over the whole plane.
        for (let i = 0; i < plane; i++) expect(images[c * plane + i]).toBeCloseTo(ratio * plain[i]!, 5);
        ratios.push(ratio);
      }
    }
    expect(new Set(ratios.map((r) => r.toFixed(6))).size).toBe(ratios.length);
    // One channel: the per-channel gain is not drawn, so the crop is the plain one.
    const one = new Float32Array(plane),
      plain = new Float32Array(plane);
    sampleCrop(gray, size, new SeededRandom(7), settings, one, new Float32Array(3 * plane), 0);
    sampleCrop(gray, size, new SeededRandom(7), { ...settings, channelGainRange: undefined }, plain, new Float32Array(3 * plane), 0);
    expect(one).toEqual(plain);
  });
});
