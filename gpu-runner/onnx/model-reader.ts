// Reads the weight tensors (initializers) back out of ONNX ModelProto bytes: enough to fine-tune
// a model this project exported. Field numbers follow onnx/onnx.proto, as model-builder.ts does.
import { DataType } from "./model-builder.ts";

interface FloatInitializer {
  name: string;
  dims: number[];
  data: Float32Array;
}

class ProtoReader {
  private readonly bytes: Uint8Array;
  private readonly view: DataView;
  position: number;
  readonly end: number;

  constructor(bytes: Uint8Array, start = 0, end = bytes.length) {
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.position = start;
    this.end = end;
  }

  varint(): number {
    let result = 0,
      shift = 0;
    for (;;) {
      const b = this.position < this.end ? this.bytes[this.position] : undefined;
      if (b === undefined) throw new Error("truncated ONNX protobuf (varint)");
      this.position++;
      result += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return result;
      shift += 7;
      if (shift > 63) throw new Error("malformed ONNX protobuf (varint too long)");
    }
  }

  /** Returns [field, wireType], or undefined at the end. */
  tag(): [number, number] | undefined {
    if (this.position >= this.end) return undefined;
    const t = this.varint();
    return [Math.floor(t / 8), t & 7];
  }

  lengthDelimited(): [number, number] {
    const length = this.varint();
    const start = this.position;
    if (start + length > this.end) throw new Error("truncated ONNX protobuf (field runs past its message)");
    this.position += length;
    return [start, start + length];
  }

  skip(wireType: number): void {
    if (wireType === 0) this.varint();
    else if (wireType === 1) this.position += 8;
    else if (wireType === 2) this.lengthDelimited();
    else if (wireType === 5) this.position += 4;
    else throw new Error(`unsupported protobuf wire type ${wireType}`);
  }

  sub([start, end]: [number, number]): ProtoReader {
    return new ProtoReader(this.bytes, start, end);
  }

  float32At(offset: number): number {
    return this.view.getFloat32(offset, true);
  }

  slice([start, end]: [number, number]): Uint8Array {
    // A copy, never a view (Buffer#slice would share memory and keep an unaligned offset).
    return Uint8Array.prototype.slice.call(this.bytes, start, end);
  }
}

function readTensor(r: ProtoReader): FloatInitializer {
  const dims: number[] = [];
  let type = 0,
    name = "";
  let raw: Uint8Array | undefined;
  const floats: number[] = [];
  for (let t = r.tag(); t; t = r.tag()) {
    const [field, wire] = t;
    if (field === 1 && wire === 0) dims.push(r.varint());
    else if (field === 1 && wire === 2) {
      const packed = r.sub(r.lengthDelimited());
      while (packed.position < packed.end) dims.push(packed.varint());
    } else if (field === 2) type = r.varint();
    else if (field === 8) name = new TextDecoder().decode(r.slice(r.lengthDelimited()));
    else if (field === 9) raw = r.slice(r.lengthDelimited());
    else if (field === 4 && wire === 2) {
      const [start, end] = r.lengthDelimited();
      for (let o = start; o < end; o += 4) floats.push(r.float32At(o));
    } else r.skip(wire);
  }
  if (type !== DataType.FLOAT) return { name, dims, data: new Float32Array(0) };
  const data = raw ? new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4) : Float32Array.from(floats);
  return { name, dims, data };
}

/** The float32 initializers of a model, by name. Other types are left out. */
export function readFloatInitializers(model: Uint8Array): Map<string, FloatInitializer> {
  const result = new Map<string, FloatInitializer>();
  const top = new ProtoReader(model);
  for (let t = top.tag(); t; t = top.tag()) {
    const [field, wire] = t;
    if (field !== 7 || wire !== 2) {
      top.skip(wire);
      continue;
    }
    const graph = top.sub(top.lengthDelimited());
    for (let g = graph.tag(); g; g = graph.tag()) {
      if (g[0] === 5 && g[1] === 2) {
        const tensor = readTensor(graph.sub(graph.lengthDelimited()));
        if (tensor.data.length > 0 || tensor.dims.length > 0) result.set(tensor.name, tensor);
      } else graph.skip(g[1]);
    }
  }
  if (result.size === 0) throw new Error("no float weights found: not an ONNX model, or one without initializers");
  return result;
}
