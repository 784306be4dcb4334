// Reverse-mode differentiation at graph-build time: each differentiable op emits its forward
// nodes and records a closure that, run in reverse order, emits its backward nodes. The result is
// one ONNX graph holding forward and backward passes, built from standard ops only.
import type { Graph } from "./graph.ts";

/** Receives the gradients of an op's outputs (undefined where none flows) and emits the
 *  gradients of its inputs (undefined for inputs that need none). */
type BackwardRule = (outputGrads: (string | undefined)[]) => (string | undefined)[];

interface Recorded {
  inputs: string[];
  outputs: string[];
  backward: BackwardRule;
}

export class Tape {
  readonly graph: Graph;
  /** False when building an inference graph: ops then emit only their forward nodes. */
  readonly recording: boolean;
  private readonly trainable = new Set<string>();
  private readonly records: Recorded[] = [];

  constructor(graph: Graph, recording: boolean) {
    this.graph = graph;
    this.recording = recording;
  }

  /** Marks a value as one whose gradient is wanted (a weight, or a test's input). */
  markTrainable(name: string): void {
    this.trainable.add(name);
  }

  needsGrad(name: string): boolean {
    return this.trainable.has(name);
  }

  /** Called by every differentiable op after emitting its forward nodes. */
  record(inputs: string[], outputs: string[], backward: BackwardRule): void {
    if (!this.recording || !inputs.some((i) => this.trainable.has(i))) return;
    for (const o of outputs) this.trainable.add(o);
    this.records.push({ inputs, outputs, backward });
  }

  /**
   * Emits the backward pass of everything recorded, seeded with d(target)/d(target) = seed
   * (a scalar value name), and returns the gradient of each requested value (a zero-free sum of
   * contributions; undefined if the value does not influence the target).
   */
  gradients(target: string, seed: string, wanted: string[]): (string | undefined)[] {
    const contributions = new Map<string, string[]>([[target, [seed]]]);
    const total = (name: string): string | undefined => {
      const parts = contributions.get(name);
      if (!parts || parts.length === 0) return undefined;
      if (parts.length > 1) contributions.set(name, [this.graph.node("Sum", parts)]);
      return contributions.get(name)![0];
    };
    for (let r = this.records.length - 1; r >= 0; r--) {
      const { inputs, outputs, backward } = this.records[r]!;
      const outputGrads = outputs.map(total);
      if (outputGrads.every((g) => g === undefined)) continue;
      const inputGrads = backward(outputGrads);
      inputs.forEach((input, i) => {
        const g = inputGrads[i];
        if (g === undefined || !this.trainable.has(input)) return;
        const list = contributions.get(input) ?? [];
        list.push(g);
        contributions.set(input, list);
      });
    }
    return wanted.map(total);
  }
}
