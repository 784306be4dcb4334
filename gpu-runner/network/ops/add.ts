import type { Tape } from "../tape.ts";

/** Elementwise sum of two tensors of the same shape (the U-Net's skip connections). */
export function add(tape: Tape, a: string, b: string): string {
  const y = tape.graph.node("Add", [a, b]);
  tape.record([a, b], [y], ([dy]) => [dy, dy]);
  return y;
}
