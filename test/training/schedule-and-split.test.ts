import { describe, expect, it } from "vitest";
import { learningRateAt } from "../../gpu-runner/training/learning-rate.ts";
import { selectionAndReport, validationIds } from "../../gpu-runner/training/validation-split.ts";

describe("learning-rate schedule", () => {
  const schedule = { peak: 1e-3, warmupSteps: 10, totalSteps: 110, finalFraction: 0.1 };
  it("warms up linearly to the peak, then decays to the final fraction", () => {
    expect(learningRateAt(schedule, 1)).toBeCloseTo(1e-4, 12);
    expect(learningRateAt(schedule, 5)).toBeCloseTo(5e-4, 12);
    expect(learningRateAt(schedule, 10)).toBeCloseTo(1e-3, 12);
    expect(learningRateAt(schedule, 60)).toBeCloseTo(0.55e-3, 12);
    expect(learningRateAt(schedule, 110)).toBeCloseTo(1e-4, 12);
    expect(learningRateAt(schedule, 500)).toBeCloseTo(1e-4, 12);
    for (let s = 11; s < 110; s++) expect(learningRateAt(schedule, s + 1)).toBeLessThanOrEqual(learningRateAt(schedule, s));
  });
});

describe("validation split", () => {
  const ids = [...Array.from({ length: 50 }, (_, i) => `big/${i}`), ...Array.from({ length: 10 }, (_, i) => `small/${i}`)];
  it("holds out the same fraction of every set, reproducibly from the seed", () => {
    const held = validationIds(ids, 0.2, 1);
    expect([...held].filter((id) => id.startsWith("big/"))).toHaveLength(10);
    expect([...held].filter((id) => id.startsWith("small/"))).toHaveLength(2);
    expect(validationIds([...ids].reverse(), 0.2, 1)).toEqual(held);
    expect(validationIds(ids, 0.2, 2)).not.toEqual(held);
  });
  it("always leaves training images and rejects impossible fractions", () => {
    expect(validationIds(["a/1", "a/2"], 0.9, 1).size).toBe(1);
    expect(() => validationIds(ids, 1, 1)).toThrow(/fraction/);
  });
});

describe("selection and report parts of the hold-out", () => {
  const held = [...Array.from({ length: 7 }, (_, i) => `a/${i}`), ...Array.from({ length: 4 }, (_, i) => `b/${i}`), "c/0"];

  it("splits every set, the selection taking the larger half, each image in exactly one part", () => {
    const { selection, report } = selectionAndReport(held, 1);
    const count = (part: Set<string>, set: string) => [...part].filter((id) => id.startsWith(`${set}/`)).length;
    expect([count(selection, "a"), count(report, "a")]).toEqual([4, 3]);
    expect([count(selection, "b"), count(report, "b")]).toEqual([2, 2]);
    expect([count(selection, "c"), count(report, "c")]).toEqual([1, 0]);
    expect(new Set([...selection, ...report])).toEqual(new Set(held));
    expect([...selection].some((id) => report.has(id))).toBe(false);
  });

  it("is reproducible from the ids and seed alone, whatever their order", () => {
    const once = selectionAndReport(held, 3);
    const again = selectionAndReport([...held].reverse(), 3);
    expect(again.selection).toEqual(once.selection);
    expect(again.report).toEqual(once.report);
  });
});

describe("a set held out by source (the crops of one slide)", () => {
  // 8 slides of 1 to 6 crops each, named as TNBC names them: tnbc-<slide>_<crop>.
  const crops = [3, 1, 6, 2, 4, 2, 5, 1].flatMap((count, s) => Array.from({ length: count }, (_, c) => `tnbc/tnbc-0${s + 1}_${c + 1}`));
  const others = Array.from({ length: 10 }, (_, i) => `other/${i}`);
  const rules = [{ set: "tnbc", pattern: /^tnbc-\d+/, fraction: 0.5 }];
  const slide = (id: string) => id.slice(5, 12);

  it("holds out whole slides, at that set's own fraction, and leaves other sets as they were", () => {
    const held = validationIds([...crops, ...others], 0.2, 1, rules);
    const heldSlides = new Set([...held].filter((id) => id.startsWith("tnbc/")).map(slide));
    expect(heldSlides.size).toBe(4);
    for (const id of crops) expect(held.has(id)).toBe(heldSlides.has(slide(id)));
    expect([...held].filter((id) => id.startsWith("other/"))).toEqual([...validationIds(others, 0.2, 1)]);
  });

  it("never puts crops of one slide in both the selection and the report part", () => {
    const held = validationIds(crops, 0.2, 1, rules);
    const { selection, report } = selectionAndReport(held, 1, rules);
    expect(new Set([...selection, ...report])).toEqual(held);
    const selectedSlides = new Set([...selection].map(slide));
    expect([...report].some((id) => selectedSlides.has(slide(id)))).toBe(false);
    expect(new Set([...report].map(slide)).size).toBe(2);
  });
});
