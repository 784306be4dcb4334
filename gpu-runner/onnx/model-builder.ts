// Builds ONNX ModelProto bytes from a small in-memory graph description. Field numbers follow
// onnx/onnx.proto (https://github.com/onnx/onnx/blob/main/onnx/onnx.proto).
import { ProtoWriter } from "./protobuf-writer.ts";

const ONNX_OPSET = 17;
const IR_VERSION = 8;

/** TensorProto.DataType values used by the project. */
export const DataType = { FLOAT: 1, INT32: 6, INT64: 7, BOOL: 9 } as const;
type DataTypeCode = (typeof DataType)[keyof typeof DataType];

type Dim = number | string; // a number is a fixed size, a string a symbolic one ("N", "H")

export interface ValueInfo {
  name: string;
  type: DataTypeCode;
  shape: Dim[];
}

export interface Initializer {
  name: string;
  dims: number[];
  data: Float32Array | BigInt64Array | Int32Array;
}

/** A plain number is an INT attribute; floats are wrapped ({ float: 1 }) so 1.0 stays a float. */
export type AttributeValue = number | { float: number } | string | number[] | Float32Array | Initializer;

export interface NodeSpec {
  op: string;
  inputs: string[];
  outputs: string[];
  name?: string;
  attributes?: Record<string, AttributeValue>;
}

export interface GraphSpec {
  name: string;
  inputs: ValueInfo[];
  outputs: ValueInfo[];
  initializers: Initializer[];
  nodes: NodeSpec[];
}

// AttributeProto.AttributeType
const ATTR_FLOAT = 1,
  ATTR_INT = 2,
  ATTR_STRING = 3,
  ATTR_TENSOR = 4,
  ATTR_FLOATS = 6,
  ATTR_INTS = 7;

function writeTensor(w: ProtoWriter, t: Initializer): void {
  w.packedVarints(1, t.dims);
  const type = t.data instanceof Float32Array ? DataType.FLOAT : t.data instanceof BigInt64Array ? DataType.INT64 : DataType.INT32;
  w.varint(2, type);
  w.string(8, t.name);
  // raw_data is little-endian, which every platform onnxruntime runs on is.
  w.bytes(9, new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
}

function writeValueInfo(w: ProtoWriter, v: ValueInfo): void {
  w.string(1, v.name);
  w.message(2, (type) =>
    type.message(1, (tensor) => {
      tensor.varint(1, v.type);
      tensor.message(2, (shape) => {
        for (const d of v.shape) shape.message(1, (dim) => (typeof d === "number" ? dim.varint(1, d) : dim.string(2, d)));
      });
    }),
  );
}

function writeAttribute(w: ProtoWriter, name: string, value: AttributeValue): void {
  w.string(1, name);
  if (typeof value === "number") {
    w.varint(3, value).varint(20, ATTR_INT);
  } else if (typeof value === "string") {
    w.string(4, value).varint(20, ATTR_STRING);
  } else if (Array.isArray(value)) {
    w.packedVarints(8, value).varint(20, ATTR_INTS);
  } else if (value instanceof Float32Array) {
    w.packedFloats(7, value).varint(20, ATTR_FLOATS);
  } else if ("float" in value) {
    w.float(2, value.float).varint(20, ATTR_FLOAT);
  } else {
    w.message(5, (t) => writeTensor(t, value)).varint(20, ATTR_TENSOR);
  }
}

export function encodeModel(graph: GraphSpec, producer = "cellseg"): Uint8Array {
  const w = new ProtoWriter();
  w.varint(1, IR_VERSION);
  w.string(2, producer);
  w.message(7, (g) => {
    for (const node of graph.nodes) {
      g.message(1, (n) => {
        for (const i of node.inputs) n.string(1, i);
        for (const o of node.outputs) n.string(2, o);
        if (node.name) n.string(3, node.name);
        n.string(4, node.op);
        for (const [key, value] of Object.entries(node.attributes ?? {})) n.message(5, (a) => writeAttribute(a, key, value));
      });
    }
    g.string(2, graph.name);
    for (const t of graph.initializers) g.message(5, (m) => writeTensor(m, t));
    for (const v of graph.inputs) g.message(11, (m) => writeValueInfo(m, v));
    for (const v of graph.outputs) g.message(12, (m) => writeValueInfo(m, v));
  });
  w.message(8, (o) => o.string(1, "").varint(2, ONNX_OPSET));
  return w.finish();
}
