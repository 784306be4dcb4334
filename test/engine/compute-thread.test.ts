// The engine's long synchronous stages (mask tracing, flows from labels) run in a compute thread:
// the thread that awaits them keeps its timers (a runner's heartbeats and time limit), and a stage
// whose signal aborts stops at once, however much work it had left.
import { describe, expect, it } from "vitest";
import { computeMasksInThread, computeThreadCounts, flowsFromLabelsInThread } from "../../gpu-runner/engine/compute-thread/compute-thread.ts";
import { FLOW_SCALE, flowsFromLabels } from "../../gpu-runner/engine/flow-targets.ts";
import { computeMasks, DEFAULT_MASK_PARAMS } from "../../gpu-runner/engine/masks/compute-masks.ts";
import { discField } from "../fixtures/labels.ts";

/** A perfect model's outputs for a field of discs, planar [3, H, W]. */
function discOutputs(side: number) {
  const scene = discField(side, side, 150, 6, 16, 5);
  const plane = side * side;
  const outputs = new Float32Array(3 * plane);
  outputs.set(
    flowsFromLabels(scene.labels, side, side).map((v) => v * FLOW_SCALE),
    0,
  );
  for (let i = 0; i < plane; i++) outputs[2 * plane + i] = scene.labels[i] ? 4 : -4;
  return { scene, outputs };
}

/**
 * Flows that turn around the image's centre: every pixel is foreground and no trajectory ever
 * settles (follow-flows.ts skips settled ones), so each takes every one of its steps.
 */
function circlingOutputs(side: number): Float32Array {
  const plane = side * side;
  const outputs = new Float32Array(3 * plane).fill(4, 2 * plane);
  const c = side / 2;
  for (let y = 0; y < side; y++)
    for (let x = 0; x < side; x++) {
      const r = Math.hypot(x - c, y - c) || 1;
      outputs[y * side + x] = (FLOW_SCALE * (x - c)) / r;
      outputs[plane + y * side + x] = (-FLOW_SCALE * (y - c)) / r;
    }
  return outputs;
}

/** Counts timer ticks while `work` runs: a stage on this thread would let none through. */
async function ticksDuring<T>(work: Promise<T>): Promise<{ value: T; ticks: number }> {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 5);
  try {
    return { value: await work, ticks };
  } finally {
    clearInterval(timer);
  }
}

describe("the engine's compute thread", () => {
  it("traces the masks the calling thread would, while the calling thread's timers keep running", async () => {
    const { outputs } = discOutputs(512);
    const plane = 512 * 512;
    const expected = computeMasks(outputs.slice(0, 2 * plane), outputs.slice(2 * plane), 512, 512, DEFAULT_MASK_PARAMS);
    const { value, ticks } = await ticksDuring(computeMasksInThread(outputs.slice(), 512, 512, DEFAULT_MASK_PARAMS));
    expect(expected.count).toBeGreaterThan(100);
    expect(value.count).toBe(expected.count);
    expect(value.labels).toEqual(expected.labels);
    expect(ticks).toBeGreaterThan(0);
  }, 30_000);

  it("hands over the outputs it is given whole, and copies a view on a larger buffer", async () => {
    const { outputs } = discOutputs(128);
    const inLarger = new Float32Array(outputs.length + 16);
    inLarger.set(outputs, 16);
    const view = inLarger.subarray(16);
    const fromView = await computeMasksInThread(view, 128, 128, DEFAULT_MASK_PARAMS);
    expect(view.length).toBe(outputs.length); // copied: the caller's buffer is untouched
    const handed = outputs.slice();
    const fromWhole = await computeMasksInThread(handed, 128, 128, DEFAULT_MASK_PARAMS);
    expect(handed.length).toBe(0); // handed over: no copy of the largest array of a pass
    expect(fromWhole.labels).toEqual(fromView.labels);
  });

  it("stops a trace that would run for minutes as soon as its signal aborts, and takes the next one", async () => {
    const side = 1024;
    // A million trajectories of 200,000 steps each: hours on one thread.
    const endless = computeMasksInThread(
      circlingOutputs(side),
      side,
      side,
      { ...DEFAULT_MASK_PARAMS, niter: 200_000, flowThreshold: 0 },
      AbortSignal.timeout(1000),
    );
    const started = performance.now();
    const { value: error, ticks } = await ticksDuring(endless.catch((e: unknown) => e));
    const stoppedAfter = performance.now() - started;
    expect((error as Error).name).toBe("TimeoutError");
    expect(stoppedAfter).toBeLessThan(5000);
    expect(ticks).toBeGreaterThan(50);
    expect(computeThreadCounts().terminated).toBeGreaterThan(0);

    const { outputs } = discOutputs(256);
    const next = await computeMasksInThread(outputs, 256, 256, DEFAULT_MASK_PARAMS);
    expect(next.count).toBeGreaterThan(20);
  }, 30_000);

  it("refuses work whose signal has already aborted, without starting it", async () => {
    const stop = new AbortController();
    stop.abort(new Error("the job is over"));
    const before = computeThreadCounts();
    await expect(computeMasksInThread(new Float32Array(3 * 16), 4, 4, DEFAULT_MASK_PARAMS, stop.signal)).rejects.toThrow("the job is over");
    expect(computeThreadCounts()).toEqual(before);
  });

  it("makes the flow targets of a label image that the calling thread would", async () => {
    const { scene } = discOutputs(256);
    expect(await flowsFromLabelsInThread(scene.labels, 256, 256)).toEqual(flowsFromLabels(scene.labels, 256, 256));
  });
});
