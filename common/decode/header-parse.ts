// Header parsers written once, as generators that yield the byte ranges they need (a request) and
// receive those bytes, and run two ways: on bytes in memory, synchronously, or on a ByteSource
// through ranged reads, so the header of a file of any size is read without reading the file.
import { ImageDecodeError } from "../../schema/image-formats/index.ts";
import type { ByteSource } from "./byte-source.ts";

/** A parser's request: `length` bytes at `offset`, named `what` in the error if they lie outside the file. */
interface ByteRequest {
  offset: number;
  length: number;
  what: string;
}

export type Parse<T> = Generator<ByteRequest, T, Uint8Array>;

/** Whether `length` bytes at `offset` are not all inside a file of `size` bytes. */
export function outside(offset: number, length: number, size: number): boolean {
  return !(Number.isSafeInteger(offset) && Number.isSafeInteger(length)) || offset < 0 || length < 0 || offset + length > size;
}

function truncated(what: string): never {
  throw new ImageDecodeError(`File truncated or corrupt: ${what} lies outside the file`);
}

/** Runs a parser on bytes in memory. */
export function parseBytes<T>(parse: Parse<T>, bytes: Uint8Array): T {
  let step = parse.next();
  while (!step.done) {
    const { offset, length, what } = step.value;
    if (outside(offset, length, bytes.length)) truncated(what);
    step = parse.next(bytes.subarray(offset, offset + length));
  }
  return step.value;
}

/** Runs a parser on a ByteSource, one ranged read per request. */
export async function parseSource<T>(parse: Parse<T>, source: ByteSource): Promise<T> {
  let step = parse.next();
  while (!step.done) {
    const { offset, length, what } = step.value;
    if (outside(offset, length, source.size)) truncated(what);
    step = parse.next(await source.read(offset, length));
  }
  return step.value;
}

/** Runs a parser written for a file that lies at `start` inside another (an entry of a ZIP). */
export function* within<T>(parse: Parse<T>, start: number): Parse<T> {
  let step = parse.next();
  while (!step.done) step = parse.next(yield { ...step.value, offset: step.value.offset + start });
  return step.value;
}
