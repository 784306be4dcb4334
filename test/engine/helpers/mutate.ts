// Seeded, deterministic mutations of a file for fuzzing: byte and bit flips, boundary values written
// over header fields, truncations, splices, insertions and deletions. Half of all positions fall in
// the first 512 bytes, where the headers and directories that steer a decoder live.
import { SeededRandom } from "../../../gpu-runner/training/random.ts";

/** A seeded uniform [0, 1) generator: the trainer's mulberry32, so mutations repeat exactly. */
export function prng(seed: number): () => number {
  const random = new SeededRandom(seed);
  return () => random.next();
}

const BOUNDARY_VALUES = [0, 1, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff];

export interface Mutation {
  bytes: Uint8Array;
  /** What was done, to reproduce a failure by hand. */
  steps: string[];
}

export function mutate(input: Uint8Array, seed: number): Mutation {
  const random = prng(seed);
  const int = (n: number) => Math.floor(random() * n);
  const position = (length: number) => (random() < 0.5 ? int(Math.min(512, length)) : int(length));
  let bytes = input.slice();
  const steps: string[] = [];
  const count = 1 + int(3);
  for (let k = 0; k < count && bytes.length > 0; k++) {
    const choice = int(7);
    if (choice === 0) {
      const at = position(bytes.length);
      const value = int(256);
      bytes[at] = value;
      steps.push(`byte ${at} = ${value}`);
    } else if (choice === 1) {
      const at = position(bytes.length);
      const bit = int(8);
      bytes[at]! ^= 1 << bit;
      steps.push(`flip bit ${bit} of byte ${at}`);
    } else if (choice === 2) {
      const width = random() < 0.5 ? 2 : 4;
      const at = position(Math.max(1, bytes.length - width));
      const value = BOUNDARY_VALUES[int(BOUNDARY_VALUES.length)]! & (width === 2 ? 0xffff : 0xffffffff);
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      const le = random() < 0.5;
      if (at + width <= bytes.length) {
        if (width === 2) view.setUint16(at, value, le);
        else view.setUint32(at, value >>> 0, le);
        steps.push(`${width * 8}-bit ${le ? "LE" : "BE"} ${value} at ${at}`);
      }
    } else if (choice === 3) {
      const length = int(bytes.length);
      bytes = bytes.slice(0, length);
      steps.push(`truncate to ${length}`);
    } else if (choice === 4) {
      const from = int(bytes.length);
      const to = position(bytes.length);
      const length = Math.min(1 + int(64), bytes.length - from, bytes.length - to);
      bytes.copyWithin(to, from, from + length);
      steps.push(`splice ${length} bytes from ${from} to ${to}`);
    } else if (choice === 5) {
      const at = position(bytes.length);
      const insert = new Uint8Array(1 + int(16)).map(() => int(256));
      const out = new Uint8Array(bytes.length + insert.length);
      out.set(bytes.subarray(0, at));
      out.set(insert, at);
      out.set(bytes.subarray(at), at + insert.length);
      bytes = out;
      steps.push(`insert ${insert.length} bytes at ${at}`);
    } else {
      const at = position(bytes.length);
      const length = Math.min(1 + int(16), bytes.length - at);
      const out = new Uint8Array(bytes.length - length);
      out.set(bytes.subarray(0, at));
      out.set(bytes.subarray(at + length), at);
      bytes = out;
      steps.push(`delete ${length} bytes at ${at}`);
    }
  }
  return { bytes, steps };
}

/**
 * Recomputes the CRC of every PNG chunk that still lies inside the file, so a mutation reaches the
 * decoder's handling of the chunk contents instead of stopping at the checksum every time.
 */
export function repairPngChecksums(bytes: Uint8Array, crc32: (data: Uint8Array) => number): Uint8Array {
  const out = bytes.slice();
  const view = new DataView(out.buffer);
  let at = 8;
  while (at + 12 <= out.length) {
    const length = view.getUint32(at);
    if (length > out.length - at - 12) break;
    view.setUint32(at + 8 + length, crc32(out.subarray(at + 4, at + 8 + length)));
    at += 12 + length;
  }
  return out;
}
