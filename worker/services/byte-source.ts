// Random access to a stored object in blocks, so header probes can follow offsets anywhere in a
// multi-gigabyte file with a few ranged reads instead of downloading it.

export interface ByteSource {
  readonly size: number;
  read(offset: number, length: number): Promise<Uint8Array>;
}

const BLOCK = 64 * 1024;
const MAX_CACHED_BLOCKS = 16;

export function r2ByteSource(bucket: R2Bucket, key: string, size: number): ByteSource {
  const cache = new Map<number, Uint8Array>();
  const block = async (index: number): Promise<Uint8Array> => {
    const hit = cache.get(index);
    if (hit) return hit;
    const offset = index * BLOCK;
    const object = await bucket.get(key, { range: { offset, length: Math.min(BLOCK, size - offset) } });
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
        out.set(bytes.subarray(from, from + take), pos - offset);
        pos += take;
      }
      return out;
    },
  };
}
