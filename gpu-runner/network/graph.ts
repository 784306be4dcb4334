// Accumulates ONNX nodes and constants with unique value names, so network code reads like maths.
import { DataType } from "../onnx/model-builder.ts";
import type { AttributeValue, GraphSpec, Initializer, NodeSpec, ValueInfo } from "../onnx/model-builder.ts";

export class Graph {
  readonly nodes: NodeSpec[] = [];
  readonly initializers: Initializer[] = [];
  private nextId = 0;
  private readonly int64Constants = new Map<string, string>();
  private readonly floatConstants = new Map<string, string>();

  uniqueName(prefix: string): string {
    return `${prefix}_${this.nextId++}`;
  }

  /** Emits one node and returns its output names. */
  nodeWithOutputs(op: string, inputs: string[], outputCount: number, attributes?: Record<string, AttributeValue>): string[] {
    const outputs: string[] = [];
    for (let i = 0; i < outputCount; i++) outputs.push(this.uniqueName(op.toLowerCase()));
    this.nodes.push({ op, inputs, outputs, attributes });
    return outputs;
  }

  /** Emits one single-output node and returns the output name. */
  node(op: string, inputs: string[], attributes?: Record<string, AttributeValue>): string {
    const output = this.uniqueName(op.toLowerCase());
    this.nodes.push({ op, inputs, outputs: [output], attributes });
    return output;
  }

  /** Emits a node whose output gets a chosen name (graph outputs). */
  namedNode(op: string, inputs: string[], output: string, attributes?: Record<string, AttributeValue>): string {
    this.nodes.push({ op, inputs, outputs: [output], attributes });
    return output;
  }

  addInitializer(name: string, dims: number[], data: Float32Array | BigInt64Array | Int32Array): string {
    this.initializers.push({ name, dims, data });
    return name;
  }

  int64(values: number[]): string {
    const key = values.join(",");
    let name = this.int64Constants.get(key);
    if (!name) {
      name = this.addInitializer(this.uniqueName("i64"), [values.length], BigInt64Array.from(values, BigInt));
      this.int64Constants.set(key, name);
    }
    return name;
  }

  /** A float32 scalar constant (rank 0, broadcasts against anything). */
  scalar(value: number): string {
    return this.floatConstant([], [value]);
  }

  /** A float32 vector constant. */
  floats(values: number[]): string {
    return this.floatConstant([values.length], values);
  }

  private floatConstant(dims: number[], values: number[]): string {
    const key = `${dims.join("x")}:${values.join(",")}`;
    let name = this.floatConstants.get(key);
    if (!name) {
      name = this.addInitializer(this.uniqueName("f32"), dims, Float32Array.from(values));
      this.floatConstants.set(key, name);
    }
    return name;
  }

  toSpec(name: string, inputs: ValueInfo[], outputs: ValueInfo[]): GraphSpec {
    return { name, inputs, outputs, initializers: this.initializers, nodes: this.nodes };
  }
}

export function floatTensor(name: string, shape: (number | string)[]): ValueInfo {
  return { name, type: DataType.FLOAT, shape };
}
