import { expect, it } from "vitest";
import { ProtoWriter } from "../../gpu-runner/onnx/protobuf-writer.ts";
it("writes", () => { expect(new ProtoWriter().varint(1, 150).finish()).toEqual(new Uint8Array([8, 150, 1])); });
