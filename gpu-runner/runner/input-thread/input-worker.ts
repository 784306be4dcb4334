// The input thread: decodes an image file, or rasterises a segmentation's ROIs into labels, away
// from the runner's main loop, whose heartbeats must keep flowing however long a hostile file
// keeps a decoder busy. One task per thread; the caller (input-thread.ts) bounds its time and heap.
import { parentPort } from "node:worker_threads";
import { decodeImage, ImageDecodeError } from "../../../common/decode/index.ts";
import { loadJpeg2000Codec } from "../../../common/decode/jpeg2000-wasm.ts";
import { readRoiArtifact } from "../../../common/roi-artifact/reader.ts";
import { RoiArtifactError } from "../../../schema/roi-artifact.ts";
import { renderLabels } from "../../../common/geometry/roi-raster.ts";
import { InputError } from "../../engine/faults.ts";
import type { InputAnswer, InputTask } from "./tasks.ts";

function bytesStream(bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      controller.enqueue(bytes);
      controller.close();
    },
  });
}

async function labelsOf(task: Extract<InputTask, { kind: "labels" }>): Promise<Uint32Array> {
  const contents = await readRoiArtifact(bytesStream(task.artifact));
  const { imageWidth, imageHeight } = contents.header;
  if (imageWidth !== task.width || imageHeight !== task.height) {
    throw new InputError(`segmentation of ${task.name} is ${imageWidth}x${imageHeight}, the image ${task.width}x${task.height}`);
  }
  return renderLabels(task.width, task.height, contents.rois);
}

parentPort!.once("message", async (task: InputTask) => {
  let answer: InputAnswer;
  let transfer: ArrayBuffer[] = [];
  try {
    if (task.kind === "decode") {
      // A slide's JPEG 2000 tiles decode with WebAssembly, loaded once in this thread.
      await loadJpeg2000Codec();
      const image = decodeImage(task.bytes);
      answer = { ok: true, image };
      transfer = [image.data.buffer as ArrayBuffer];
    } else {
      const labels = await labelsOf(task);
      answer = { ok: true, labels };
      transfer = [labels.buffer as ArrayBuffer];
    }
  } catch (error) {
    const fault = error instanceof ImageDecodeError ? "decode" : error instanceof InputError || error instanceof RoiArtifactError ? "input" : "other";
    answer = { ok: false, fault, message: error instanceof Error ? error.message : String(error) };
  }
  parentPort!.postMessage(answer, transfer);
});
