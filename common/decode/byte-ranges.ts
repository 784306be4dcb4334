// Reading many small byte ranges (a region's strips, tiles or rows) in few requests: ranges that lie
// close together in the file are merged into one read, a few reads run at once, and each range's
// bytes go to its own handler. Also a small block cache for the scattered little reads of file
// headers (TIFF directories), so each costs one request per block rather than one per field.
import { checkReadRange, type ByteSource } from "./byte-source.ts";

export interface RangeRead {
  offset: number;
  length: number;
  /** Receives exactly the range's bytes: a view into a larger read, to copy from, not to keep or modify. */
  use(bytes: Uint8Array): void;
}

interface ReadPlan {
  /** Ranges closer than this are read together, the gap read and dropped (default 64 KiB). */
  maxGap?: number;
  /** Ranges are merged into reads of at most this many bytes, unless one range alone is larger (default 16 MiB). */
  maxRead?: number;
  /** Reads in flight at once (default 4). */
  concurrency?: number;
}

interface Group {
  offset: number;
  end: number;
  members: RangeRead[];
}

/** Groups the ranges into reads: sorted by offset, merged while the gap and the read size allow. */
function groupRanges(ranges: readonly RangeRead[], maxGap = 64 * 1024, maxRead = 16 * 1024 * 1024): Group[] {
  const sorted = [...ranges].sort((a, b) => a.offset - b.offset);
  const groups: Group[] = [];
  let current: Group | undefined;
  for (const range of sorted) {
    const end = range.offset + range.length;
    if (current && range.offset - current.end <= maxGap && Math.max(current.end, end) - current.offset <= maxRead) {
      current.end = Math.max(current.end, end);
      current.members.push(range);
    } else {
      current = { offset: range.offset, end, members: [range] };
      groups.push(current);
    }
  }
  return groups;
}

/** Reads every range and hands its bytes over; stops picking up new reads after the first failure. */
export async function readRanges(source: ByteSource, ranges: readonly RangeRead[], plan: ReadPlan = {}): Promise<void> {
  for (const range of ranges) checkReadRange(source.size, range.offset, range.length);
  const groups = groupRanges(ranges, plan.maxGap, plan.maxRead);
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < groups.length) {
      const group = groups[next++]!;
      try {
        const bytes = await source.read(group.offset, group.end - group.offset);
        for (const member of group.members) {
          const from = member.offset - group.offset;
          member.use(bytes.subarray(from, from + member.length));
        }
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(plan.concurrency ?? 4, groups.length) }, worker));
}

/**
 * Serves reads from aligned blocks of `blockSize` bytes, keeping the `maxBlocks` most recently used;
 * reads longer than a block go straight to the source.
 */
export function cachedSource(source: ByteSource, blockSize = 16 * 1024, maxBlocks = 64): ByteSource {
  const cache = new Map<number, Promise<Uint8Array>>(); // least recently used first
  const block = (index: number): Promise<Uint8Array> => {
    let hit = cache.get(index);
    if (hit) cache.delete(index);
    else {
      const offset = index * blockSize;
      hit = source.read(offset, Math.min(blockSize, source.size - offset));
      hit.catch(() => cache.delete(index));
    }
    cache.set(index, hit);
    if (cache.size > maxBlocks) cache.delete(cache.keys().next().value!);
    return hit;
  };
  return {
    size: source.size,
    async read(offset, length) {
      checkReadRange(source.size, offset, length);
      if (length > blockSize) return source.read(offset, length);
      const out = new Uint8Array(length);
      for (let pos = offset; pos < offset + length; ) {
        const index = Math.floor(pos / blockSize);
        const bytes = await block(index);
        const from = pos - index * blockSize;
        const take = Math.min(bytes.length - from, offset + length - pos);
        out.set(bytes.subarray(from, from + take), pos - offset);
        pos += take;
      }
      return out;
    },
  };
}
