// Little-endian byte building and parsing for the ROI artifact (layout in roi-artifact.ts).
// Varints use arithmetic rather than 32-bit bitwise operators so values above 2^31 stay exact.

import { RoiArtifactError } from "../../schema/roi-artifact.ts";

const MAX_VARINT_BYTES = 8;
/** Whether this platform stores numbers as the artifact does (every platform the service runs on). */
const LITTLE_ENDIAN = new Uint8Array(new Float64Array([1]).buffer)[7] === 0x3f;

/** A growable byte buffer. */
export class ByteBuilder {
  bytes: Uint8Array;
  view: DataView;
  length = 0;

  constructor(initialCapacity = 1024) {
    this.bytes = new Uint8Array(initialCapacity);
    this.view = new DataView(this.bytes.buffer);
  }

  private reserve(extra: number): void {
    const needed = this.length + extra;
    if (needed <= this.bytes.length) return;
    let capacity = this.bytes.length * 2;
    while (capacity < needed) capacity *= 2;
    const grown = new Uint8Array(capacity);
    grown.set(this.bytes.subarray(0, this.length));
    this.bytes = grown;
    this.view = new DataView(grown.buffer);
  }

  u16(value: number): void {
    this.reserve(2);
    this.view.setUint16(this.length, value, true);
    this.length += 2;
  }

  u32(value: number): void {
    this.reserve(4);
    this.view.setUint32(this.length, value, true);
    this.length += 4;
  }

  f64(value: number): void {
    this.reserve(8);
    this.view.setFloat64(this.length, value, true);
    this.length += 8;
  }

  raw(bytes: Uint8Array): void {
    this.reserve(bytes.length);
    this.bytes.set(bytes, this.length);
    this.length += bytes.length;
  }

  varint(value: number): void {
    this.reserve(MAX_VARINT_BYTES);
    let v = value;
    while (v >= 0x80) {
      this.bytes[this.length++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.bytes[this.length++] = v;
  }

  zigzag(value: number): void {
    this.varint(value >= 0 ? 2 * value : -2 * value - 1);
  }

  /** A copy of the bytes written so far. */
  take(): Uint8Array {
    return this.bytes.slice(0, this.length);
  }

  clear(): void {
    this.length = 0;
  }
}

/** Reads values from one buffer, failing with a RoiArtifactError instead of reading past its end. */
export class ByteCursor {
  readonly bytes: Uint8Array;
  readonly view: DataView;
  readonly what: string;
  offset = 0;

  /** `what` names the buffer in error messages, e.g. "chunk 3". */
  constructor(bytes: Uint8Array, what: string) {
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.what = what;
  }

  get remaining(): number {
    return this.bytes.length - this.offset;
  }

  private need(n: number): void {
    if (this.remaining < n) {
      throw new RoiArtifactError(`ROI artifact: ${this.what} ends ${n - this.remaining} byte(s) early at offset ${this.offset}`);
    }
  }

  u16(): number {
    this.need(2);
    const v = this.view.getUint16(this.offset, true);
    this.offset += 2;
    return v;
  }

  u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.offset, true);
    this.offset += 4;
    return v;
  }

  f64(): number {
    this.need(8);
    const v = this.view.getFloat64(this.offset, true);
    this.offset += 8;
    return v;
  }

  /** `n` little-endian f64s as one Float64Array (a copy of their bytes where the platform is little-endian too). */
  f64s(n: number): Float64Array {
    this.need(8 * n);
    const start = this.offset;
    this.offset += 8 * n;
    if (LITTLE_ENDIAN) {
      // Copied into a buffer of their own, which is aligned for a Float64Array (the payload need not be).
      const copy = new Uint8Array(8 * n);
      copy.set(this.bytes.subarray(start, start + 8 * n));
      return new Float64Array(copy.buffer);
    }
    const out = new Float64Array(n);
    for (let i = 0; i < n; i++) out[i] = this.view.getFloat64(start + 8 * i, true);
    return out;
  }

  raw(n: number): Uint8Array {
    this.need(n);
    const out = this.bytes.subarray(this.offset, this.offset + n);
    this.offset += n;
    return out;
  }

  varint(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < MAX_VARINT_BYTES; i++) {
      if (this.offset >= this.bytes.length) this.need(1);
      // In range: need(1) above throws at the end of the bytes.
      const b = this.bytes[this.offset++]!;
      value += (b & 0x7f) * scale;
      if (b < 0x80) return value;
      scale *= 0x80;
    }
    throw new RoiArtifactError(`ROI artifact: varint longer than ${MAX_VARINT_BYTES} bytes in ${this.what} at offset ${this.offset}`);
  }

  zigzag(): number {
    const v = this.varint();
    return v % 2 === 0 ? v / 2 : -(v + 1) / 2;
  }
}
