// The public models' descriptions are their manifests' (scripts/describe-public-models.ts writes
// them where the worker reads them), and hold no figure: accuracy and speed are dated in
// docs/models.md alone.
import { describe, expect, it } from "vitest";
import { PUBLIC_MODEL_DESCRIPTIONS } from "../../schema/public-model-descriptions.ts";
import { publicModelDescriptions } from "../../scripts/describe-public-models.ts";

describe("the public models' descriptions", () => {
  it("are generated from the manifests as they are now (run `npm run models:describe` after editing one)", () => {
    expect(PUBLIC_MODEL_DESCRIPTIONS).toEqual(publicModelDescriptions());
  });

  it("state no accuracy figure, and send the reader to docs/models.md for them", () => {
    for (const description of Object.values(PUBLIC_MODEL_DESCRIPTIONS)) {
      expect(description).not.toMatch(/AP@|0\.\d{3}/);
      expect(description).toMatch(/docs\/models\.md\.$/);
    }
  });
});
