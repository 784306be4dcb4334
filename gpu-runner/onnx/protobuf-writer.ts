// A minimal protobuf wire-format writer: just the field kinds ONNX's ModelProto uses
// (varint, length-delimited, packed float/int64, fixed32). Written from the protobuf encoding
// spec (https://protobuf.dev/programming-guides/encoding/); no generated code, no runtime deps.

export class ProtoWriter {
  private chunks: Uint8Array[] = [];
  private scratch = new Uint8Array(16);
  private length = 0;

  get byteLength(): number {
    return this.length;
  }

  private push(bytes: Uint8Array): void {
    this.chunks.push(bytes);
    this.length += bytes.byteLength;
  }

  private rawVarint(value: bigint): void {
    // Negative int64 values are written as their two's complement (10 bytes), as protobuf does.
    let v = BigInt.asUintN(64, value);
    let n = 0;
    while (v >= 0x80n) {
      this.scratch[n++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.scratch[n++] = Number(v);
    this.push(this.scratch.slice(0, n));
  }

  private tag(field: number, wireType: number): void {
    this.rawVarint(BigInt((field << 3) | wireType));
  }

  varint(field: number, value: number | bigint): this {
    this.tag(field, 0);
    this.rawVarint(BigInt(value));
    return this;
  }

  float(field: number, value: number): this {
    this.tag(field, 5);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, value, true);
    this.push(b);
    return this;
  }

  bytes(field: number, value: Uint8Array): this {
    this.tag(field, 2);
    this.rawVarint(BigInt(value.byteLength));
    this.push(value);
    return this;
  }

  string(field: number, value: string): this {
    return this.bytes(field, new TextEncoder().encode(value));
  }

  message(field: number, build: (w: ProtoWriter) => void): this {
    const inner = new ProtoWriter();
    build(inner);
    return this.bytes(field, inner.finish());
  }

  packedVarints(field: number, values: ArrayLike<number | bigint>): this {
    const inner = new ProtoWriter();
    for (let i = 0; i < values.length; i++) inner.rawVarint(BigInt(values[i]!));
    return this.bytes(field, inner.finish());
  }

  packedFloats(field: number, values: ArrayLike<number>): this {
    const b = new Uint8Array(values.length * 4);
    const view = new DataView(b.buffer);
    for (let i = 0; i < values.length; i++) view.setFloat32(i * 4, values[i]!, true);
    return this.bytes(field, b);
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.length);
    let offset = 0;
    for (const c of this.chunks) {
      out.set(c, offset);
      offset += c.byteLength;
    }
    return out;
  }
}
