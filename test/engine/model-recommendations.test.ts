import { describe, expect, it } from "vitest";
import { MODALITIES } from "../../schema/modality.ts";
import { RECOMMENDED_MODALITIES, recommendedFor, recommendedModel } from "../../schema/model-recommendations.ts";

describe("the public model recommended for an image", () => {
  it("is cpsam-histology for stained histology, cpsam-large for brightfield, cpsam for fluorescence and for an unknown modality", () => {
    expect(recommendedModel("histology")).toBe("cpsam-histology");
    expect(recommendedModel("brightfield")).toBe("cpsam-large");
    expect(recommendedModel("fluorescence")).toBe("cpsam");
    expect(recommendedModel(null)).toBe("cpsam");
  });

  it("names exactly one public model for every modality", () => {
    for (const modality of MODALITIES) expect(Object.values(RECOMMENDED_MODALITIES).filter((modalities) => modalities.includes(modality))).toHaveLength(1);
  });

  it("names no modality for an organization's own model, even one named like a public model", () => {
    expect(recommendedFor("cpsam", false)).toEqual([]);
    expect(recommendedFor("cpsam", true)).toEqual(["fluorescence"]);
  });
});
