// The survey of a large image measures the cell diameter on several windows rich in foreground,
// apart from one another, and keeps their median: one region of unusual cells (or of keratin, a
// fold) among the brightest does not decide the size every block runs at.
import { describe, expect, it } from "vitest";
import { surveyImage } from "../../gpu-runner/engine/blocks/image-survey.ts";
import { inMemoryRegions } from "../../gpu-runner/engine/blocks/region-source.ts";
import { loadModelFromBytes } from "../../gpu-runner/engine/model.ts";
import { medianObjectDiameter } from "../../gpu-runner/engine/object-diameter.ts";
import { buildReferenceModel } from "../../gpu-runner/engine/reference-model.ts";
import { renderNuclei } from "../fixtures/image.ts";
import { discField, emptyLabels } from "../fixtures/labels.ts";

describe("surveyImage", () => {
  it("estimates the diameter on three windows apart and keeps their median", async () => {
    // Three zones side by side, nuclei of about 9, 14 and 22 px.
    const [zone, height] = [700, 700];
    const scene = emptyLabels(3 * zone, height);
    const zones = [discField(zone, height, 700, 4, 5, 1), discField(zone, height, 300, 6.5, 7.5, 2), discField(zone, height, 120, 10, 12, 3)];
    let offset = 0;
    zones.forEach((field, z) => {
      let top = 0;
      for (let y = 0; y < height; y++) {
        for (let x = 0; x < zone; x++) {
          const id = field.labels[y * zone + x]!;
          if (id) scene.labels[y * 3 * zone + z * zone + x] = offset + id;
          top = Math.max(top, id);
        }
      }
      offset += top;
    });
    const { onnx, manifest } = buildReferenceModel({ diameter: 15, channels: 1, tileSize: 128 });
    const model = await loadModelFromBytes(onnx, manifest, { executionProvider: "cpu", log: () => {} });
    const survey = await surveyImage(inMemoryRegions(renderNuclei(scene)), model, { diameter: "auto" });
    const middle = medianObjectDiameter(zones[1]!.labels);
    expect(survey.diameter! / middle).toBeGreaterThan(0.8);
    expect(survey.diameter! / middle).toBeLessThan(1.25);
    expect(survey.sampledPixels).toBeGreaterThan(3 * 700 * 700);
  });
});
