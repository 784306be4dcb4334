import { describe, expect, it } from "vitest";
import { flowsFromLabels } from "../../gpu-runner/engine/flow-targets.ts";
import { emptyLabels, mixedScene, paintDisc, paintRect } from "../fixtures/labels.ts";

describe("flowsFromLabels (Cellpose's heat-diffusion flow targets)", () => {
  it("gives a 1x3 bar flows pointing to its middle pixel, and zero flow at the centre itself", () => {
    const image = emptyLabels(5, 3);
    paintRect(image, 1, 1, 3, 1, 7);
    const flows = flowsFromLabels(image.labels, 5, 3);
    const plane = 15;
    const at = (x: number, y: number) => [flows[y * 5 + x], flows[plane + y * 5 + x]];
    expect(at(1, 1)).toEqual([0, 1]); // (dY, dX): left end flows right
    expect(at(3, 1)).toEqual([0, -1]); // right end flows left
    expect(at(2, 1)).toEqual([0, 0]); // symmetric centre: no gradient
    expect(at(0, 0)).toEqual([0, 0]); // background
  });

  it("returns unit vectors inside masks and zeros on background, pointing inwards on a disc", () => {
    const image = emptyLabels(40, 40);
    paintDisc(image, 20, 20, 12, 1);
    const flows = flowsFromLabels(image.labels, 40, 40);
    const plane = 1600;
    for (let i = 0; i < plane; i++) {
      const norm = Math.hypot(flows[i]!, flows[plane + i]!);
      if (image.labels[i] === 0) expect(norm).toBe(0);
      else if (i !== 20 * 40 + 20) expect(norm).toBeCloseTo(1, 5);
    }
    expect(flows[plane + 20 * 40 + 10]).toBeGreaterThan(0.99); // left edge: dX ≈ +1
    expect(flows[30 * 40 + 20]).toBeLessThan(-0.99); // bottom edge: dY ≈ -1
  });

  it("keeps touching masks independent: each one's flows see only its own pixels", () => {
    const together = emptyLabels(60, 30);
    paintRect(together, 5, 5, 20, 20, 1);
    paintRect(together, 25, 5, 20, 20, 2);
    const alone = emptyLabels(60, 30);
    paintRect(alone, 5, 5, 20, 20, 1);
    const a = flowsFromLabels(together.labels, 60, 30);
    const b = flowsFromLabels(alone.labels, 60, 30);
    // Same iteration count (both masks share the same extent), so mask 1's flows are identical.
    for (let i = 0; i < 1800; i++) {
      if (alone.labels[i] === 1) {
        expect(a[i]).toBeCloseTo(b[i]!, 6);
        expect(a[1800 + i]).toBeCloseTo(b[1800 + i]!, 6);
      }
    }
  });

  it("diffuses each mask for its own box's steps: a ring around the whole image changes no other mask's flows", () => {
    // The case in small: one object the size of the image once set every mask's step count.
    const squares = emptyLabels(200, 200);
    for (let k = 0; k < 25; k++) paintRect(squares, 20 + (k % 5) * 32, 20 + Math.floor(k / 5) * 32, 4, 4, k + 1);
    const ringed = emptyLabels(200, 200);
    ringed.labels.set(squares.labels);
    for (let i = 0; i < 200; i++)
      for (const [x, y] of [
        [i, 0],
        [i, 199],
        [0, i],
        [199, i],
      ])
        ringed.labels[y! * 200 + x!] = 99;
    const alone = flowsFromLabels(squares.labels, 200, 200);
    const withRing = flowsFromLabels(ringed.labels, 200, 200);
    for (let i = 0; i < 200 * 200; i++) {
      if (squares.labels[i] === 0) continue;
      expect(withRing[i]).toBe(alone[i]);
      expect(withRing[200 * 200 + i]).toBe(alone[200 * 200 + i]);
    }
  });

  it("does not depend on the label values used", () => {
    const scene = mixedScene();
    const relabelled = scene.labels.map((v) => (v === 0 ? 0 : 1000 + 7 * v));
    expect(flowsFromLabels(relabelled, scene.width, scene.height)).toEqual(flowsFromLabels(scene.labels, scene.width, scene.height));
  });

  it("rejects labels that do not match the stated size", () => {
    expect(() => flowsFromLabels(new Uint32Array(10), 4, 4)).toThrow(/expected 4x4/);
  });
});
