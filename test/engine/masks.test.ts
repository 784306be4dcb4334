import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { averagePrecision } from "../../common/scoring/average-precision.ts";
import { FLOW_SCALE, flowsFromLabels } from "../../gpu-runner/engine/flow-targets.ts";
import { atImageResolution, computeMasks, DEFAULT_MASK_PARAMS, type MaskParams } from "../../gpu-runner/engine/masks/compute-masks.ts";
import { removeBadFlowMasks } from "../../gpu-runner/engine/masks/flow-error.ts";
import { fillHolesAndRemoveSmall } from "../../gpu-runner/engine/masks/holes-and-sizes.ts";
import { DiffusionScratch, diffuseInMask } from "../../gpu-runner/engine/heat-diffusion.ts";
import { diffusionSteps } from "../../schema/work-limits.ts";
import { labelBoxes, renumberInRasterOrder } from "../../common/geometry/label-image.ts";
import { chunksRunByWorkers, runChunks, sharedFloat32, sharedInt32, startMaskThreads } from "../../gpu-runner/engine/masks/mask-threads.ts";
import { keepLargestComponents } from "../../common/geometry/label-largest-piece.ts";
import { followFlowsRange } from "../../gpu-runner/engine/masks/follow-flows.ts";
import { masksFromEndPoints } from "../../gpu-runner/engine/masks/seeds.ts";
import { discField, emptyLabels, mixedScene, paintDisc, paintRect, type LabelImage } from "../fixtures/labels.ts";

/** The network outputs a perfect model would give for these labels. */
function idealOutputs(scene: LabelImage) {
  const flows = flowsFromLabels(scene.labels, scene.width, scene.height).map((v) => v * FLOW_SCALE);
  const cellprob = Float32Array.from(scene.labels, (v) => (v ? 4 : -4));
  return { flows, cellprob };
}

function reconstruct(scene: LabelImage, params: Partial<MaskParams> = {}) {
  const { flows, cellprob } = idealOutputs(scene);
  return computeMasks(flows, cellprob, scene.width, scene.height, { ...DEFAULT_MASK_PARAMS, ...params });
}

describe("mask reconstruction from flows (Cellpose's dynamics)", () => {
  it("recovers touching, concave and tiny objects exactly from their ideal flows", () => {
    const scene = mixedScene();
    const { labels, count } = reconstruct(scene);
    expect(count).toBe(9);
    expect(averagePrecision(scene.labels, labels).ap).toEqual([1, 1, 1]);
  });

  it("recovers a crowded field of discs", () => {
    const scene = discField(256, 256, 60, 5, 14, 3);
    const { labels } = reconstruct(scene);
    expect(averagePrecision(scene.labels, labels).ap[0]).toBe(1);
  });

  it("gives the same masks on worker threads as on one thread", async () => {
    const scene = discField(512, 512, 150, 6, 16, 5); // enough foreground to be shared out
    const single = reconstruct(scene, { threads: 1 });
    await startMaskThreads(2);
    const shared = reconstruct(scene, { threads: 2 });
    expect(single.count).toBeGreaterThan(100);
    expect(shared.count).toBe(single.count);
    expect(shared.labels).toEqual(single.labels);
  }, 30_000); // worker start-up on a loaded 2-core machine

  it("leaves chunks to the workers while the calling thread is slow, with the same result", async () => {
    // Which thread runs which chunk depends on the scheduler (a fast calling thread may claim them
    // all before a worker wakes); a calling thread slowed to 100 ms a chunk makes the workers' share certain.
    const scene = discField(256, 256, 60, 6, 16, 7);
    const { flows } = idealOutputs(scene);
    const plane = scene.width * scene.height;
    const unitFlows = sharedFloat32(2 * plane);
    for (let i = 0; i < 2 * plane; i++) unitFlows[i] = scene.labels[i % plane] ? flows[i]! / FLOW_SCALE : 0;
    const starts: number[] = [];
    for (let i = 0; i < plane; i++) if (scene.labels[i]) starts.push(i);
    const foreground = sharedInt32(starts.length);
    foreground.set(starts);
    const chunkSize = 512;
    const chunkCount = Math.ceil(starts.length / chunkSize);
    const expected = new Int32Array(starts.length);
    followFlowsRange(unitFlows, scene.width, scene.height, foreground, 200, 0, starts.length, expected);

    await startMaskThreads(2);
    const before = chunksRunByWorkers();
    const ends = sharedInt32(starts.length);
    const pause = new Int32Array(new SharedArrayBuffer(4));
    const job = { kind: "follow" as const, flows: unitFlows, foreground, ends, width: scene.width, height: scene.height, iterations: 200, chunkSize };
    runChunks(job, chunkCount, 2, (chunk) => {
      Atomics.wait(pause, 0, 0, 100);
      followFlowsRange(unitFlows, scene.width, scene.height, foreground, 200, chunk * chunkSize, Math.min(starts.length, (chunk + 1) * chunkSize), ends);
    });
    expect(chunkCount).toBeGreaterThan(4);
    expect(chunksRunByWorkers()).toBeGreaterThan(before);
    expect(ends).toEqual(expected);
  }, 30_000);

  it("ends settled trajectories early where running every step ends them too", () => {
    // Ideal flows with deterministic noise (network outputs are never ideal), in computeMasks's form:
    // unit flows, zero outside the foreground.
    const scene = discField(384, 384, 90, 6, 16, 9);
    const plane = scene.width * scene.height;
    const flows = flowsFromLabels(scene.labels, scene.width, scene.height);
    let seed = 12345;
    const noise = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31 - 0.5) * 0.3;
    const foreground: number[] = [];
    for (let i = 0; i < plane; i++) {
      if (scene.labels[i]) {
        foreground.push(i);
        flows[i]! += noise();
        flows[plane + i]! += noise();
      } else {
        flows[i] = 0;
        flows[plane + i] = 0;
      }
    }
    const starts = Int32Array.from(foreground);
    const endsOf = (tolerance?: number) => {
      const ends = new Int32Array(starts.length);
      followFlowsRange(flows, scene.width, scene.height, starts, 200, 0, starts.length, ends, tolerance);
      return ends;
    };
    const early = endsOf(),
      everyStep = endsOf(0);
    // A few percent of trajectories still drifting in their cycle end one pixel over, inside the
    // same sink: the masks are the same.
    let same = 0;
    for (let n = 0; n < starts.length; n++) if (early[n] === everyStep[n]) same++;
    expect(same / starts.length).toBeGreaterThan(0.95);
    const masks = (ends: Int32Array) => {
      const labels = masksFromEndPoints(ends, starts, scene.width, scene.height);
      return { labels, count: renumberInRasterOrder(labels) };
    };
    const everyStepMasks = masks(everyStep);
    expect(everyStepMasks.count).toBeGreaterThan(80);
    expect(masks(early)).toEqual(everyStepMasks);
  });

  it("gives exactly the labels it gave before its speed work, on noisy flows that the flow check thins", () => {
    // Each disc's flows carry noise of its own strength (none to ±1 per component), so the flow check
    // drops 16 of the 70 masks and keeps the rest. The hashes were taken with the code before the
    // engine-speed changes (heat diffusion on runs, clamps and the rest): any change to the dynamics,
    // seeds, flow check or clean-up that moves one pixel fails here.
    const scene = discField(320, 256, 70, 5, 18, 11);
    const plane = scene.width * scene.height;
    const unit = flowsFromLabels(scene.labels, scene.width, scene.height);
    let seed = 2024;
    const noise = (strength: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31 - 0.5) * strength;
    const flows = new Float32Array(2 * plane),
      cellprob = new Float32Array(plane);
    for (let i = 0; i < plane; i++) {
      const k = scene.labels[i]!;
      flows[i] = (unit[i]! + noise((k % 5) * 0.5)) * FLOW_SCALE;
      flows[plane + i] = (unit[plane + i]! + noise((k % 5) * 0.5)) * FLOW_SCALE;
      cellprob[i] = (k ? 2 : -2) + noise(2);
    }
    const sha256 = (labels: Uint32Array) => createHash("sha256").update(new Uint8Array(labels.buffer)).digest("hex");
    const checked = computeMasks(flows.slice(), cellprob, scene.width, scene.height, { ...DEFAULT_MASK_PARAMS, threads: 1 });
    const unchecked = computeMasks(flows.slice(), cellprob, scene.width, scene.height, { ...DEFAULT_MASK_PARAMS, flowThreshold: 0, threads: 1 });
    // Taken again when each mask's heat diffusion got its own box's steps (heat-diffusion.ts,
    // diffusionSteps) instead of the largest box's: the discs' flows moved, and one more mask fails the check.
    expect([checked.count, unchecked.count]).toEqual([54, 70]);
    expect(sha256(checked.labels)).toBe("b09019e19ad22744d7176c572ce7bc9e6fff0905bf238e633944ab5b0a35ec52");
    expect(sha256(unchecked.labels)).toBe("6a1b8b30fb330b0f005ca48bded049e5626e14c41027a308330a4a178822492e");
  });

  it("takes 1/scale times the steps on flows resized up from a pass that shrank the image, as Cellpose's 200 / rescale", () => {
    expect(atImageResolution(DEFAULT_MASK_PARAMS, 0.2).niter).toBe(1000);
    expect(atImageResolution(DEFAULT_MASK_PARAMS, 24 / 148).niter).toBe(1233);
    // An unscaled or enlarged pass keeps the steps given.
    expect(atImageResolution(DEFAULT_MASK_PARAMS, 1)).toEqual(DEFAULT_MASK_PARAMS);
    expect(atImageResolution(DEFAULT_MASK_PARAMS, 3).niter).toBe(200);
  });

  it("keeps a nucleus five times the model's size whole: its weak resized flows need the extra steps", () => {
    // A network's flows inside large nuclei are weaker than the ideal unit vectors; resized up from
    // a pass at a fifth of the image's size, a rim pixel 80 px out moves 0.2 px a step.
    const scene = emptyLabels(320, 320);
    paintDisc(scene, 160, 160, 80, 1);
    const { flows, cellprob } = idealOutputs(scene);
    const weak = flows.map((v) => v * 0.2);
    const at = (params: MaskParams) => computeMasks(weak.slice(), cellprob, scene.width, scene.height, params);
    const params = { ...DEFAULT_MASK_PARAMS, flowThreshold: 0 };
    // 200 steps leave the rim short of the centre: what comes back is the middle of the nucleus.
    expect(averagePrecision(scene.labels, at(params).labels).ap[0]).toBe(0);
    const scaled = at(atImageResolution(params, 0.2));
    expect(scaled.count).toBe(1);
    expect(averagePrecision(scene.labels, scaled.labels).ap).toEqual([1, 1, 1]);
  });

  it("numbers masks in raster order of their first pixel", () => {
    const { labels, count } = reconstruct(mixedScene());
    let next = 1;
    for (const v of labels) {
      if (v === 0 || v < next) continue;
      expect(v).toBe(next);
      next++;
    }
    expect(next - 1).toBe(count);
  });

  it("finds nothing where no pixel passes the cell-probability threshold", () => {
    const scene = mixedScene();
    const { flows, cellprob } = idealOutputs(scene);
    const result = computeMasks(flows, cellprob, scene.width, scene.height, { ...DEFAULT_MASK_PARAMS, cellprobThreshold: 10 });
    expect(result.count).toBe(0);
    expect(result.labels.every((v) => v === 0)).toBe(true);
  });

  it("removes masks below the minimum size and above the maximum image fraction", () => {
    const scene = mixedScene(); // its two smallest objects have 20 and 29 pixels
    expect(reconstruct(scene, { minSize: 25 }).count).toBe(8);
    expect(reconstruct(scene, { minSize: 30 }).count).toBe(7);
    const big = emptyLabels(40, 40);
    paintRect(big, 2, 2, 30, 30, 1); // 900 of 1600 pixels
    expect(reconstruct(big).count).toBe(0);
    expect(reconstruct(big, { maxSizeFraction: 0.6 }).count).toBe(1);
  });
});

describe("flow-error quality control", () => {
  it("recomputes each mask's flows bit for bit as the flow targets do, reusing one scratch for all masks", () => {
    const scene = mixedScene(); // concave, touching and tiny masks
    const { width, height } = scene;
    const labels = scene.labels.slice();
    const count = renumberInRasterOrder(labels);
    const targets = flowsFromLabels(labels, width, height);
    const boxes = labelBoxes(labels, width, count);
    const scratch = new DiffusionScratch();
    for (let k = count; k >= 1; k--) {
      // largest-first and smallest-first orders both occur here
      const x0 = boxes.minX[k]!,
        y0 = boxes.minY[k]!,
        w = boxes.maxX[k]! - x0 + 1,
        h = boxes.maxY[k]! - y0 + 1;
      diffuseInMask(labels, width, k, x0, y0, w, h, diffusionSteps(w, h), scratch);
      const { t } = scratch,
        stride = w + 2;
      for (let y = 0; y < h; y++)
        for (let x = 0; x < w; x++) {
          const i = (y0 + y) * width + x0 + x;
          if (labels[i] !== k) continue;
          const j = (y + 1) * stride + x + 1;
          const dy = t[j + stride]! - t[j - stride]!,
            dx = t[j + 1]! - t[j - 1]!;
          const norm = 1e-60 + Math.sqrt(dy * dy + dx * dx);
          expect(Math.fround(dy / norm)).toBe(targets[i]);
          expect(Math.fround(dx / norm)).toBe(targets[width * height + i]);
        }
    }
  });

  it("keeps masks whose flows agree with the network's and drops those that disagree", () => {
    const scene = emptyLabels(60, 30);
    paintDisc(scene, 15, 15, 10, 1);
    paintDisc(scene, 45, 15, 10, 2);
    const unit = flowsFromLabels(scene.labels, 60, 30);
    // Reverse the flows of disc 2: squared error 4 per pixel, far above 0.4.
    for (let i = 0; i < 1800; i++)
      if (scene.labels[i] === 2) {
        unit[i] = -unit[i]!;
        unit[1800 + i] = -unit[1800 + i]!;
      }
    const labels = scene.labels.slice();
    expect(removeBadFlowMasks(labels, 2, unit, 60, 0.4)).toBe(1);
    expect(labels.includes(1)).toBe(true);
    expect(labels.includes(2)).toBe(false);
  });
});

describe("mask clean-up", () => {
  it("fills holes inside a mask, including holes occupied by another mask", () => {
    const scene = emptyLabels(20, 20);
    paintRect(scene, 2, 2, 12, 12, 1);
    paintRect(scene, 5, 5, 3, 3, 0); // empty hole
    paintRect(scene, 9, 9, 2, 2, 2); // another mask enclosed by mask 1
    fillHolesAndRemoveSmall(scene.labels, 2, 20, 0);
    for (let y = 2; y < 14; y++) for (let x = 2; x < 14; x++) expect(scene.labels[y * 20 + x]).toBe(1);
  });

  it("keeps only the largest piece of a mask split in two", () => {
    const scene = emptyLabels(20, 10);
    paintRect(scene, 1, 1, 5, 5, 1);
    paintRect(scene, 10, 1, 2, 2, 1); // stray piece
    expect(keepLargestComponents(scene.labels, 1, 20)).toBe(4);
    expect(scene.labels.filter((v) => v === 1).length).toBe(25);
  });

  it("joins pixels touching only at a corner, and of equal pieces keeps the first in raster order", () => {
    const scene = emptyLabels(12, 8);
    // A staircase of single pixels, each touching the next diagonally: one piece.
    for (let i = 0; i < 5; i++) scene.labels[i * 12 + i] = 1;
    // Two 2x2 pieces of mask 2 with a gap between them: the upper-left one comes first.
    paintRect(scene, 8, 0, 2, 2, 2);
    paintRect(scene, 8, 4, 2, 2, 2);
    // A C-shape whose arms meet below: one piece, though the top row holds two runs.
    paintRect(scene, 1, 6, 1, 2, 3);
    paintRect(scene, 3, 6, 1, 2, 3);
    scene.labels[7 * 12 + 2] = 3;
    expect(keepLargestComponents(scene.labels, 3, 12)).toBe(4);
    expect(scene.labels.filter((v) => v === 1).length).toBe(5);
    expect(scene.labels[0 * 12 + 8]).toBe(2);
    expect(scene.labels[4 * 12 + 8]).toBe(0);
    expect(scene.labels.filter((v) => v === 3).length).toBe(5);
  });
});
