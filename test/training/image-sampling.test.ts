import { describe, expect, it } from "vitest";
import { cumulativeSamplingWeights, drawIndex } from "../../gpu-runner/training/image-sampling.ts";
import { SeededRandom } from "../../gpu-runner/training/random.ts";

// Three images of a big set and one of a small set, interleaved as directory order might leave them.
const ids = ["big/a", "big/b", "small/x", "big/c"];
// drawIndex answers an index of the cumulative weights, one per id, so `counts[drawIndex(…)]!` is a count.

function drawnShares(sampling: "per-set" | "per-image", draws = 40_000): number[] {
  const cumulative = cumulativeSamplingWeights(ids, sampling);
  const random = new SeededRandom(7);
  const counts = new Array<number>(ids.length).fill(0);
  for (let n = 0; n < draws; n++) counts[drawIndex(cumulative, random.next())]!++;
  return counts.map((c) => c / draws);
}

describe("which training image a crop comes from", () => {
  it("per set (the default): every set gets the same share, split evenly among its images", () => {
    const shares = drawnShares("per-set");
    expect(shares[2]).toBeCloseTo(1 / 2, 1);
    for (const big of [0, 1, 3]) expect(shares[big]).toBeCloseTo(1 / 6, 1);
  });

  it("per image (Cellpose's way): every image is drawn equally often, whatever its set", () => {
    for (const share of drawnShares("per-image")) expect(share).toBeCloseTo(1 / 4, 1);
  });

  it("ends the cumulative weights at exactly 1 and maps u in [0, 1) onto every index", () => {
    const cumulative = cumulativeSamplingWeights(ids, "per-image");
    expect(Array.from(cumulative)).toEqual([0.25, 0.5, 0.75, 1]);
    expect([0, 0.25, 0.5, 0.75, 0.999999].map((u) => drawIndex(cumulative, u))).toEqual([0, 1, 2, 3, 3]);
  });
});

describe("sampling tempered by the square root of a set's size", () => {
  it("gives each set a share in proportion to the square root of its image count", () => {
    const cumulative = cumulativeSamplingWeights(ids, "sqrt");
    const random = new SeededRandom(11);
    const counts = new Array<number>(ids.length).fill(0);
    for (let n = 0; n < 40_000; n++) counts[drawIndex(cumulative, random.next())]!++;
    const smallShare = counts[2]! / 40_000;
    expect(smallShare).toBeCloseTo(1 / (1 + Math.sqrt(3)), 1);
  });

  it("groups images by everything before the last '/' of their id, so a set's modalities are sets of their own", () => {
    const cumulative = cumulativeSamplingWeights(["dsb/histology/a", "dsb/fluorescence/b", "dsb/fluorescence/c"], "per-set");
    expect(cumulative[0]).toBeCloseTo(0.5, 10);
  });
});
