// zlib (RFC 1950) inflation that never produces more than the caller can use: node's zlib stops
// and throws as soon as its output passes maxOutputLength, so a stream that would inflate to a
// gigabyte costs no more than `limit` bytes and the time to produce them. A stream cut short
// yields what it has (the caller decides whether that is enough).
import { constants, inflateSync } from "node:zlib";
import { ImageDecodeError } from "../../schema/image-formats/index.ts";

/**
 * Headroom above the limit given to zlib: workerd's node:zlib grows its output 64 KiB at a time and
 * refuses ("Memory limit exceeded") a growth step that would pass maxOutputLength, even when the
 * data itself fits, so an exactly sized limit fails there for outputs above 64 KiB. The result is
 * checked against the limit itself afterwards.
 */
const GROWTH_STEP = 64 * 1024;

export function inflateBounded(input: Uint8Array, limit: number, what: string): Uint8Array {
  const tooLarge = () => new ImageDecodeError(`${what} inflates past the ${limit} bytes the image can hold: file corrupt or forged`);
  try {
    const inflated = inflateSync(input, { maxOutputLength: Math.max(1, limit) + GROWTH_STEP, finishFlush: constants.Z_SYNC_FLUSH });
    if (inflated.length > limit) throw tooLarge();
    return inflated;
  } catch (error) {
    if (error instanceof ImageDecodeError) throw error;
    const code = (error as { code?: string }).code;
    if (code === "ERR_BUFFER_TOO_LARGE" || (error as Error).message === "Memory limit exceeded") throw tooLarge();
    throw new ImageDecodeError(`${what} is corrupt: ${(error as Error).message}`);
  }
}
