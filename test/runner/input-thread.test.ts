// The runner decodes images and rasterises ROIs in a thread of its own, under a time and a heap
// limit: its main loop (heartbeats, other jobs) keeps running meanwhile, and an input past a limit
// fails its job as the input's fault, with the reason.
import { encode as encodePng } from "fast-png";
import { describe, expect, it } from "vitest";
import { decodeImage, ImageDecodeError } from "../../common/decode/index.ts";
import { decodeInThread, labelsInThread } from "../../gpu-runner/runner/input-thread/input-thread.ts";
import { readConfig } from "../../gpu-runner/runner/config.ts";
import { faultOf } from "../../gpu-runner/runner/job-fault.ts";
import { encodeRoiArtifact } from "../../common/roi-artifact/writer.ts";
import { renderLabels } from "../../common/geometry/roi-raster.ts";
import { inRasterOrder, roisFromShapes, syntheticShapes } from "../fixtures/rois-from-runs.ts";

const ROOMY = { seconds: 120, heapMb: 512 };

function noisePng(side: number): Uint8Array {
  const data = new Uint16Array(side * side);
  let seed = 7;
  for (let i = 0; i < data.length; i++) data[i] = (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 16;
  return encodePng({ width: side, height: side, data, depth: 16, channels: 1 });
}

async function artifactBytes(width: number, height: number, rois: ReturnType<typeof roisFromShapes>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const part of encodeRoiArtifact({ imageWidth: width, imageHeight: height, confluency: 0.3, modelName: "m", modelVersion: "1" }, rois))
    parts.push(part);
  return Buffer.concat(parts);
}

describe("the runner's input thread", () => {
  it("decodes an image as the main thread would, while the main loop keeps running", async () => {
    const png = noisePng(1024);
    const expected = decodeImage(png);
    let ticks = 0;
    const heartbeat = setInterval(() => ticks++, 5);
    const image = await decodeInThread(png.slice(), ROOMY);
    clearInterval(heartbeat);
    expect(image).toEqual(expected);
    expect(ticks).toBeGreaterThan(0); // a decode on the main loop would have let no timer run
  }, 60_000);

  it("rasterises a segmentation's ROIs into the labels the main thread would", async () => {
    const rois = roisFromShapes(inRasterOrder(syntheticShapes(30, 20, 20, 3)));
    const labels = await labelsInThread(await artifactBytes(600, 400, rois), 600, 400, "cells.png", ROOMY);
    expect(labels).toEqual(
      await renderLabels(
        600,
        400,
        (async function* () {
          yield* rois;
        })(),
      ),
    );
  });

  it("hands back a file the decoder refuses as the decoder's error: the input's fault", async () => {
    const error = await decodeInThread(new TextEncoder().encode("not an image at all"), ROOMY).catch((e) => e);
    expect(error).toBeInstanceOf(ImageDecodeError);
    expect(faultOf(error)).toBe("input");
  });

  it("refuses ROIs made for another image size, as the input's fault", async () => {
    const rois = roisFromShapes(inRasterOrder(syntheticShapes(3, 2, 20, 3)));
    const error = await labelsInThread(await artifactBytes(60, 40, rois), 64, 40, "cells.png", ROOMY).catch((e) => e);
    expect(error.message).toBe("segmentation of cells.png is 60x40, the image 64x40");
    expect(faultOf(error)).toBe("input");
  });

  it("stops a task past its time limit and says so; the job fails once, as the input's fault", async () => {
    const error = await decodeInThread(noisePng(1024), { seconds: 0.001, heapMb: 512 }).catch((e) => e);
    expect(error.message).toBe("decoding the image took more than 0.001 s, the runner's limit (INPUT_SECONDS); the file is too costly to read");
    expect(faultOf(error)).toBe("input");
  });

  it("takes its limits from the runner's configuration, with a heap large enough to start a thread", () => {
    const base = ["--worker-url", "http://127.0.0.1:8787", "--token", "t"];
    expect(readConfig(base, {}).inputBudget).toEqual({ seconds: 300, heapMb: 1024 });
    expect(readConfig([...base, "--input-seconds", "30"], { INPUT_HEAP_MB: "256" }).inputBudget).toEqual({ seconds: 30, heapMb: 256 });
    // Below some megabytes V8 cannot even create the thread's isolate, and that kills the process.
    expect(() => readConfig([...base, "--input-heap-mb", "8"], {})).toThrow('input heap must be a number >= 64, got "8"');
  });
});
