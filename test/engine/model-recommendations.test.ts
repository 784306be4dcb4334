import { describe, expect, it } from "vitest";
import { MODALITIES } from "../../schema/modality.ts";
import { RECOMMENDED_MODALITIES, recommendedFor, recommendedModel, trainingBase } from "../../schema/model-recommendations.ts";

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

describe("the base a fine-tuning starts from when the user names none", () => {
  it("is the model recommended for the modality most of the training images share, and says so", () => {
    expect(trainingBase(["histology", "histology", null])).toEqual({
      modelId: "cpsam-histology",
      reason: "recommended for histology, the modality the service read in 2 of the 3 images",
    });
    expect(trainingBase(["brightfield", "fluorescence", "brightfield"]).modelId).toBe("cpsam-large");
  });

  it("is cpsam, the default, when no image's modality is known, and says why", () => {
    expect(trainingBase([null, null])).toEqual({
      modelId: "cpsam",
      reason: "the default: no image's modality is known yet (the service reads it when it segments an image; imported segmentations do not say)",
    });
  });
});
