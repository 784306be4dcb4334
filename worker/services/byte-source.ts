// Random access to a stored object in blocks, so header probes can follow offsets anywhere in a
// multi-gigabyte file with a few ranged reads instead of downloading it. The reads are budgeted:
// a forged file (directories scattered over the file, or thousands of them) ends in a
// ReadBudgetError instead of thousands of R2 requests.

import type { ByteSource } from "../../common/decode/byte-source.ts";

export class ReadBudgetError extends Error {}

interface ReadBudget {
  /** Ranged reads (R2 requests) allowed. */
  reads: number;
  /** Bytes allowed over all reads. */
  bytes: number;
}

const BLOCK = 16 * 1024;
const MAX_CACHED_BLOCKS = 64;

/** The part of an R2 bucket a byte source uses (structural, so the probe also runs outside workerd). */
export interface RangedReader {
  get(key: string, options: { range: { offset: number; length: number } }): Promise<{ arrayBuffer(): Promise<ArrayBuffer> } | null>;
}

export function r2ByteSource(bucket: RangedReader, key: string, size: number, budget: ReadBudget): ByteSource {
  const cache = new Map<number, Uint8Array>(); // in least recently used order
  let reads = 0;
  let bytesRead = 0;
  const block = async (index: number): Promise<Uint8Array> => {
    const hit = cache.get(index);
    if (hit) {
      cache.delete(index);
      cache.set(index, hit);
      return hit;
    }
    const offset = index * BLOCK;
    const length = Math.min(BLOCK, size - offset);
    if (reads + 1 > budget.reads || bytesRead + length > budget.bytes) {
      throw new ReadBudgetError(`reading needs more than ${budget.reads} reads or ${budget.bytes} bytes of the stored file`);
    }
    reads++;
    bytesRead += length;
    const object = await bucket.get(key, { range: { offset, length } });
    if (!object) throw new Error(`object ${key} disappeared while being read`);
    const bytes = new Uint8Array(await object.arrayBuffer());
    if (cache.size >= MAX_CACHED_BLOCKS) cache.delete(cache.keys().next().value!);
    cache.set(index, bytes);
    return bytes;
  };
  return {
    size,
    async read(offset, length) {
      const end = Math.min(size, offset + length);
      const out = new Uint8Array(Math.max(0, end - offset));
      for (let pos = offset; pos < end; ) {
        const index = Math.floor(pos / BLOCK);
        const bytes = await block(index);
        const from = pos - index * BLOCK;
        const take = Math.min(bytes.length - from, end - pos);
        if (take <= 0) break;
        out.set(bytes.subarray(from, from + take), pos - offset);
        pos += take;
      }
      return out;
    },
  };
}
