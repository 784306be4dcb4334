// Random access to an image file's bytes, wherever they are: in memory, in a local file of any
// size (positional reads, so files past 2 GiB and 4 GiB work), or behind an HTTP URL that answers
// Range requests (the runner reads R2 objects through signed URLs). The region reader asks only
// for the bytes it needs, so a huge file is never read whole.
import { open } from "node:fs/promises";
import { ImageDecodeError } from "../../schema/image-formats/index.ts";

export interface ByteSource {
  /** File size in bytes (a safe integer: offsets of 64-bit BigTIFFs are refused past 2^53). */
  readonly size: number;
  /**
   * Exactly `length` bytes at `offset`; the range must lie within [0, size] (a RangeError if not).
   * The caller owns the returned bytes and may modify them.
   */
  read(offset: number, length: number): Promise<Uint8Array>;
}

// Exported for its test only (test/engine/decode/region-reader.test.ts).
/** A transport failure (short read, server without Range support, file changed): not the image's fault. */
export class ByteSourceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ByteSourceError";
  }
}

/** Throws a RangeError unless [offset, offset + length) is a range of safe integers within [0, size]. */
export function checkReadRange(size: number, offset: number, length: number): void {
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0 || offset + length > size) {
    throw new RangeError(`read of ${length} bytes at ${offset} lies outside the ${size}-byte source`);
  }
}

/** A source that counts the bytes asked of it, and refuses a read that would take the count past `capBytes`. */
interface CountedSource extends ByteSource {
  /** Bytes requested so far. */
  readonly bytesRead: number;
}

/**
 * Counts the bytes read through `source`; a read that would take the count past `capBytes` is
 * refused with an ImageDecodeError (the job fails with the reason, it is not retried).
 */
export function countedSource(source: ByteSource, capBytes = Number.POSITIVE_INFINITY): CountedSource {
  let bytesRead = 0;
  return {
    size: source.size,
    get bytesRead() {
      return bytesRead;
    },
    async read(offset, length) {
      if (bytesRead + length > capBytes) {
        const times = (capBytes / Math.max(1, source.size)).toFixed(1);
        throw new ImageDecodeError(
          `reading this image would take more than ${capBytes} bytes, ${times} times its ${source.size}-byte file ` +
            `(${bytesRead} read so far): its layout makes region reads repeat (a PNG or strip TIFF whose rows do not fit the block memory)`,
          "too-large",
        );
      }
      bytesRead += length;
      return source.read(offset, length);
    },
  };
}

/** Bytes already in memory (tests, small files). */
export function bytesSource(bytes: Uint8Array): ByteSource {
  return {
    size: bytes.length,
    async read(offset, length) {
      checkReadRange(bytes.length, offset, length);
      return bytes.slice(offset, offset + length);
    },
  };
}

/** A local file, read with positional reads; close it when done. */
export async function fileSource(path: string): Promise<ByteSource & { close(): Promise<void> }> {
  const handle = await open(path, "r");
  let size: number;
  try {
    size = (await handle.stat()).size;
  } catch (error) {
    await handle.close();
    throw error;
  }
  return {
    size,
    async read(offset, length) {
      checkReadRange(size, offset, length);
      const out = new Uint8Array(length);
      for (let filled = 0; filled < length; ) {
        const { bytesRead } = await handle.read(out, filled, length - filled, offset + filled);
        if (bytesRead === 0) throw new ByteSourceError(`${path} ended at ${offset + filled} bytes while reading ${length} at ${offset}: the file shrank`);
        filled += bytesRead;
      }
      return out;
    },
    close: () => handle.close(),
  };
}

/**
 * An object behind `url` of `size` bytes, read with HTTP Range requests: each read must be
 * answered 206 with exactly the bytes asked for (a 200 means the server ignored the range and would
 * send the whole object, which is refused without reading its body).
 */
export function httpRangeSource(url: string, size: number, fetchImpl: typeof fetch = fetch): ByteSource {
  if (!Number.isSafeInteger(size) || size < 0) throw new RangeError(`invalid source size ${size}`);
  return {
    size,
    async read(offset, length) {
      checkReadRange(size, offset, length);
      if (length === 0) return new Uint8Array(0);
      const last = offset + length - 1;
      const response = await fetchImpl(url, { headers: { Range: `bytes=${offset}-${last}` } });
      const where = `bytes ${offset}-${last} of ${redact(url)}`;
      if (response.status !== 206) {
        await response.body?.cancel().catch(() => {});
        throw new ByteSourceError(`range request for ${where} was answered ${response.status}, not 206 Partial Content`);
      }
      const range = response.headers.get("content-range");
      const match = range ? /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(range.trim()) : null;
      if (range && (!match || Number(match[1]) !== offset || Number(match[2]) !== last || (match[3] !== "*" && Number(match[3]) !== size))) {
        await response.body?.cancel().catch(() => {});
        throw new ByteSourceError(`range request for ${where} was answered with Content-Range "${range}" (object of ${size} bytes expected)`);
      }
      const body = await readBody(response, length, where);
      if (body.length !== length) throw new ByteSourceError(`range request for ${where} returned ${body.length} bytes`);
      return body;
    },
  };
}

/** Reads at most `length` bytes of the body, refusing one that runs past it. */
async function readBody(response: Response, length: number, where: string): Promise<Uint8Array> {
  const out = new Uint8Array(length);
  if (!response.body) return out.subarray(0, 0);
  const reader = response.body.getReader();
  let filled = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (filled + value.length > length) {
      await reader.cancel().catch(() => {});
      throw new ByteSourceError(`range request for ${where} returned more than the ${length} bytes asked for`);
    }
    out.set(value, filled);
    filled += value.length;
  }
  return out.subarray(0, filled);
}

/** A signed URL's query holds its signature: never put it in a message. */
function redact(url: string): string {
  const query = url.indexOf("?");
  return query < 0 ? url : `${url.slice(0, query)}?…`;
}

/** The `size` bytes at `start` of `source` as a source of their own (a stored entry of a ZIP). */
export function subSource(source: ByteSource, start: number, size: number): ByteSource {
  if (start + size > source.size) throw new RangeError(`a part of ${size} bytes at ${start} lies outside the ${source.size}-byte source`);
  return {
    size,
    read(offset, length) {
      checkReadRange(size, offset, length);
      return source.read(start + offset, length);
    },
  };
}
