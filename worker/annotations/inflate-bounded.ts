// Inflation that stops at a limit: the compressed data is fed in small slices, so at most about a
// megabyte (deflate's best ratio is about 1032:1) is inflated past `limit` before the answer is
// known. fflate's one-shot functions inflate to whatever size the data asks for.

import { Inflate, Unzlib } from "fflate";

const SLICE = 1024;

/** Raw deflate or zlib-wrapped data, inflated; "too large" past `limit`, "corrupt" if it is not valid or ends early. */
export function inflateBounded(input: Uint8Array, limit: number, framing: "raw" | "zlib"): Uint8Array | "too large" | "corrupt" {
  const parts: Uint8Array[] = [];
  let produced = 0;
  let finished = false;
  const collect = (data: Uint8Array, final: boolean) => {
    produced += data.length;
    if (produced <= limit) parts.push(data.slice());
    if (final) finished = true;
  };
  const inflater = framing === "raw" ? new Inflate(collect) : new Unzlib(collect);
  try {
    for (let at = 0; at < input.length && produced <= limit; at += SLICE) inflater.push(input.subarray(at, at + SLICE), at + SLICE >= input.length);
  } catch {
    return "corrupt";
  }
  if (produced > limit) return "too large";
  if (!finished) return "corrupt";
  const out = new Uint8Array(produced);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
