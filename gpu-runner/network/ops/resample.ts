// Halving and doubling the spatial size by exact factors of two; each is the other's adjoint
// up to a constant, which is what their backward passes use.
import type { Graph } from "../graph.ts";
import type { Tape } from "../tape.ts";

const POOL_2X2 = { kernel_shape: [2, 2], strides: [2, 2] };

function nearestUpsample2x(g: Graph, x: string): string {
  // "asymmetric" + "floor" makes output pixel (y, x) copy input pixel (y >> 1, x >> 1) exactly.
  return g.node("Resize", [x, "", g.floats([1, 1, 2, 2])], {
    mode: "nearest",
    coordinate_transformation_mode: "asymmetric",
    nearest_mode: "floor",
  });
}

/** 2x2 mean pooling, stride 2. Height and width must be even. */
export function averagePool2x(tape: Tape, x: string): string {
  const g = tape.graph;
  const y = g.node("AveragePool", [x], POOL_2X2);
  tape.record([x], [y], ([dy]) => [g.node("Mul", [nearestUpsample2x(g, dy!), g.scalar(0.25)])]);
  return y;
}

/** Nearest-neighbour 2x upsampling. */
export function upsample2x(tape: Tape, x: string): string {
  const g = tape.graph;
  const y = nearestUpsample2x(g, x);
  tape.record([x], [y], ([dy]) => [g.node("Mul", [g.node("AveragePool", [dy!], POOL_2X2), g.scalar(4)])]);
  return y;
}
