// Fine-tuning's evidence drawn by objects (issue #46): bands of every image held out, margins that
// keep each object on one side, folds that rotate over a small set, the same split from the same seed.
import { describe, expect, it } from "vitest";
import { MIN_HELD_OUT_OBJECTS } from "../../gpu-runner/training/gain-evidence.ts";
import { type Fold, type ImageRegion, MAX_FOLDS, objectsAlong, type SplitImage, splitByRegions } from "../../gpu-runner/training/region-split.ts";
import { discField } from "../fixtures/labels.ts";

const image = (width: number, height: number, count: number, seed: number): SplitImage => discField(width, height, count, 5, 9, seed);

const objectCount = (img: SplitImage) => img.labels.reduce((max, id) => Math.max(max, id), 0);

/** The label ids with a pixel in the regions of `image`. */
function idsIn(img: SplitImage, regions: readonly ImageRegion[], index: number): Set<number> {
  const ids = new Set<number>();
  for (const r of regions.filter((region) => region.image === index)) {
    for (let y = r.y; y < r.y + r.height; y++)
      for (let x = r.x; x < r.x + r.width; x++) if (img.labels[y * img.width + x]) ids.add(img.labels[y * img.width + x]!);
  }
  return ids;
}

function folds(images: SplitImage[], seed = 1): Fold[] {
  const split = splitByRegions(images.map(objectsAlong), MIN_HELD_OUT_OBJECTS, seed);
  if (split.kind !== "folds") throw new Error(`expected folds, got ${split.kind}`);
  return split.folds;
}

describe("splitByRegions", () => {
  it("reaches the guard's minimum from one image holding five times it, in every fold", () => {
    for (const seed of [3, 4, 5]) {
      const one = image(900, 300, 5 * MIN_HELD_OUT_OBJECTS, seed);
      expect(objectCount(one)).toBe(5 * MIN_HELD_OUT_OBJECTS);
      const split = splitByRegions([one].map(objectsAlong), MIN_HELD_OUT_OBJECTS, 1);
      expect(split).toMatchObject({ kind: "folds", objects: 100, rotate: false });
      if (split.kind !== "folds") return;
      expect(split.folds).toHaveLength(3);
      for (const fold of split.folds) expect(fold.heldOutObjects).toBeGreaterThanOrEqual(MIN_HELD_OUT_OBJECTS);
    }
  });

  it("holds out at most a fifth of a large set's objects in a fold", () => {
    const split = splitByRegions([image(1600, 1200, 400, 14)].map(objectsAlong), MIN_HELD_OUT_OBJECTS, 1);
    expect(split.kind === "folds" && split.folds.length).toBe(MAX_FOLDS);
  });

  it("shares no object between a fold's training regions and its held-out band", () => {
    const images = [image(600, 400, 70, 5), image(300, 500, 40, 6)];
    for (const fold of folds(images)) {
      images.forEach((img, index) => {
        const heldOut = idsIn(img, fold.heldOut, index);
        const training = idsIn(img, fold.training, index);
        expect([...heldOut].filter((id) => training.has(id))).toEqual([]);
        expect(training.size).toBeGreaterThan(0);
      });
    }
  });

  it("judges every object of a small set in some fold, and rotates the folds", () => {
    const images = [image(500, 300, 17, 7), image(400, 400, 13, 8)];
    const split = splitByRegions(images.map(objectsAlong), MIN_HELD_OUT_OBJECTS, 1);
    // Two folds of about 15 objects: neither alone reaches the minimum, together they judge all 30.
    expect(split).toMatchObject({ kind: "folds", objects: 30, rotate: true });
    if (split.kind !== "folds") return;
    expect(split.folds).toHaveLength(2);
    images.forEach((img, index) => {
      const judged = new Set(split.folds.flatMap((fold) => [...idsIn(img, fold.heldOut, index)]));
      expect(judged.size).toBe(objectCount(img));
    });
    // The cuts fall between objects where the tissue leaves room: each is judged once.
    expect(split.folds.reduce((n, fold) => n + fold.heldOutObjects, 0)).toBe(30);
  });

  it("never makes an image of 3 nuclei the whole evidence: every image gives each fold a band, as far as its objects go", () => {
    const images = [image(120, 120, 3, 9), image(600, 300, 60, 10), image(500, 500, 60, 11)];
    expect(objectCount(images[0]!)).toBe(3);
    for (const fold of folds(images)) {
      expect(new Set(fold.heldOut.map((region) => region.image))).toContain(1);
      expect(new Set(fold.heldOut.map((region) => region.image))).toContain(2);
      expect(idsIn(images[0]!, fold.heldOut, 0).size).toBeLessThanOrEqual(3);
      expect(fold.heldOutObjects).toBeGreaterThanOrEqual(MIN_HELD_OUT_OBJECTS);
    }
  });

  it("is seeded: the same seed gives the same split, another seed may deal the bands to other folds", () => {
    const images = [image(600, 400, 70, 5), image(300, 500, 40, 6)];
    expect(folds(images, 4)).toEqual(folds(images, 4));
    const seeds = [1, 2, 3, 4, 5].map((seed) => JSON.stringify(folds(images, seed)));
    expect(new Set(seeds).size).toBeGreaterThan(1);
  });

  it("calls the set too few only when all its objects are below the minimum, and says how many to add", () => {
    const images = [image(200, 200, 8, 12), image(200, 200, 7, 13)];
    expect(splitByRegions(images.map(objectsAlong), MIN_HELD_OUT_OBJECTS, 1)).toEqual({ kind: "too_few", objects: 15, missing: MIN_HELD_OUT_OBJECTS - 15 });
  });
});
