// What the compute threads do, and how their answers cross back. Shared by the threads
// (compute-worker.ts) and their caller (compute-thread.ts).
import type { MaskParams } from "../masks/compute-masks.ts";

export type ComputeTask =
  /** Masks from network outputs, planar [3, H, W] (dY, dX, cellprob logit), handed over. */
  | { kind: "masks"; outputs: Float32Array; width: number; height: number; params: MaskParams }
  /** Flow targets of a label image (training's preparation). */
  | { kind: "flows"; labels: Uint32Array; width: number; height: number }
  /** Starts the thread's mask threads ahead of the first image, which otherwise pays for their start-up. */
  | { kind: "warm"; threads: number };

export type ComputeAnswer =
  | { ok: true; kind: "masks"; labels: Uint32Array; count: number; timings: Record<string, number> }
  | { ok: true; kind: "flows"; flows: Float32Array }
  | { ok: true; kind: "warm" }
  | { ok: false; message: string };
