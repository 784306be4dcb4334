// Whose fault a failure is comes from the error's type, never its message text.
import { describe, expect, it } from "vitest";
import { decodeImage } from "../../common/decode/index.ts";
import { InputError, ModelError } from "../../gpu-runner/engine/faults.ts";
import { loadModelFromBytes, parseManifest } from "../../gpu-runner/engine/model.ts";
import { buildReferenceModel } from "../../gpu-runner/engine/reference-model.ts";
import { segmentImage } from "../../gpu-runner/engine/segment.ts";
import { JobStopped } from "../../gpu-runner/runner/job-context.ts";
import { faultOf } from "../../gpu-runner/runner/job-fault.ts";
import { TransientError } from "../../common/retry.ts";

const failure = async (run: () => unknown) => {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error("expected a failure");
};

describe("the fault a runner reports", () => {
  it("is the input's for an undecodable image and for a diameter that would rescale it too large", async () => {
    expect(faultOf(await failure(() => decodeImage(new Uint8Array([0x49, 0x49, 42, 0, 8, 0, 0, 0, 0, 0]))))).toBe("input");
    const { onnx, manifest } = buildReferenceModel({ diameter: 15, channels: 1, tileSize: 128 });
    const model = await loadModelFromBytes(onnx, manifest, { executionProvider: "cpu", log: () => {} });
    const image = { width: 64, height: 64, channels: 1, bitDepth: 16, sampleFormat: "uint", data: new Float32Array(64 * 64) } as Parameters<
      typeof segmentImage
    >[0];
    const tooLarge = await failure(() => segmentImage(image, model, { diameter: 0.01 }));
    expect(tooLarge).toBeInstanceOf(InputError);
    expect((tooLarge as Error).message).toMatch(/would rescale the image to .* too large/);
    expect(faultOf(tooLarge)).toBe("input");
  });

  it("is the model's for a manifest or graph no runner can use", async () => {
    const broken = await failure(() => parseManifest("{not json", "model.json"));
    expect(broken).toBeInstanceOf(ModelError);
    expect(faultOf(broken)).toBe("model");
  });

  it("is the service's when the worker or storage stays unreachable, the runner's otherwise", () => {
    expect(faultOf(new TransientError("POST /jobs/x/complete: 503"))).toBe("service");
    expect(faultOf(new JobStopped("the runner is shutting down"))).toBe("runner");
    // An error nobody foresaw, whatever its words say, is retried elsewhere.
    expect(faultOf(new Error("model manifest has no segmentation, labels hold 3 values"))).toBe("runner");
  });
});
