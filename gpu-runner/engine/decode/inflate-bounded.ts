// zlib (RFC 1950) inflation that never produces more than the caller can use: node's zlib stops
// and throws as soon as its output passes maxOutputLength, so a stream that would inflate to a
// gigabyte costs no more than `limit` bytes and the time to produce them. A stream cut short
// yields what it has (the caller decides whether that is enough).
import { constants, inflateSync } from "node:zlib";
import { ImageDecodeError } from "../../../schema/image-formats/index.ts";

export function inflateBounded(input: Uint8Array, limit: number, what: string): Uint8Array {
  try {
    return inflateSync(input, { maxOutputLength: Math.max(1, limit), finishFlush: constants.Z_SYNC_FLUSH });
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "ERR_BUFFER_TOO_LARGE") throw new ImageDecodeError(`${what} inflates past the ${limit} bytes the image can hold: file corrupt or forged`);
    throw new ImageDecodeError(`${what} is corrupt: ${(error as Error).message}`);
  }
}
