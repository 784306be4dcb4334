import type { Tape } from "../tape.ts";

export function relu(tape: Tape, x: string): string {
  const g = tape.graph;
  const y = g.node("Relu", [x]);
  tape.record([x], [y], ([dy]) => {
    const active = g.node("Greater", [y, g.scalar(0)]);
    return [g.node("Where", [active, dy!, g.scalar(0)])];
  });
  return y;
}
