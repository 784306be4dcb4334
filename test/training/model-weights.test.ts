// Exported models carry their weights and architecture: fine-tuning starts from exactly them.
import { describe, expect, it } from "vitest";
import { buildInferenceModel } from "../../gpu-runner/network/inference-model.ts";
import { parameterLayout } from "../../gpu-runner/network/parameter-layout.ts";
import { weightsFromModel } from "../../gpu-runner/network/weights-from-model.ts";
import { initialParameters } from "../../gpu-runner/training/initial-parameters.ts";

describe("weights read back from an exported inference model", () => {
  it("equal the weights and network config it was built from", () => {
    const network = { inputChannels: 2, widths: [4, 6, 8, 10] };
    const params = initialParameters(parameterLayout(network), 12);
    const read = weightsFromModel(buildInferenceModel(network, params));
    expect(read.network).toEqual(network);
    expect(read.params).toEqual(params);
  });

  it("are refused with a clear error for bytes that are not such a model", () => {
    expect(() => weightsFromModel(new Uint8Array([1, 2, 3]))).toThrow();
    expect(() => buildInferenceModel({ inputChannels: 1, widths: [2, 3] }, new Float32Array(5))).toThrow(/needs/);
  });
});
