// The order fine-tuning works through its pairs in: by their content, not by how the request
// listed them. The worker lists a training's images by id, and ids are drawn at upload, so the
// same annotations uploaded again came in another order, and the seeded split and draws, which
// follow the order, differed (issue #46: the same annotations and seed must split alike).
import type { DecodedImage } from "../../common/decode/index.ts";

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

function fnv1a(hash: number, bytes: Uint8Array): number {
  let h = hash;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i]!, FNV_PRIME) >>> 0;
  return h;
}

const bytesOf = (values: ArrayBufferView) => new Uint8Array(values.buffer, values.byteOffset, values.byteLength);

/** A number that depends on the pair's size, pixels and labels only (FNV-1a over their bytes). */
export function pairFingerprint(image: DecodedImage, labels: Uint32Array): number {
  const shape = new Uint32Array([image.width, image.height, image.channels]);
  return fnv1a(fnv1a(fnv1a(FNV_OFFSET, bytesOf(shape)), bytesOf(image.data)), bytesOf(labels));
}

/** The pairs' indices in fingerprint order; pairs of equal fingerprints keep the request's order. */
export function contentOrder(fingerprints: readonly number[]): number[] {
  return fingerprints.map((_, i) => i).sort((a, b) => fingerprints[a]! - fingerprints[b]! || a - b);
}
