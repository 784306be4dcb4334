// The worker's upload probe and the engine's decoder read the same rules (schema/image-formats):
// whatever the engine decodes, the probe accepts with the same format, size, channels, planes,
// pixel size and channel names,
// for the valid seed files and for every mutation of them that still decodes. (The other way
// round the probe may accept more: it reads headers only, so damaged pixel data passes it.) On
// every mutation, the probe answers or throws an ImageDecodeError, never another error.
import { describe, expect, it } from "vitest";
import { decodeImage, ImageDecodeError, probeImage as probeInEngine } from "../../../common/decode/index.ts";
import { crc32 } from "../../../common/crc32.ts";
import { memoryByteSource } from "../../../worker/services/byte-source.ts";
import { probeImage as probeAtUpload } from "../../../worker/services/image-probe.ts";
import { fuzzSeeds } from "../helpers/fuzz-seeds.ts";
import { mutate, repairPngChecksums } from "../helpers/mutate.ts";

const ITERATIONS = Number(process.env.FUZZ_ITERATIONS ?? 600);

/** The probe's answer, or its ImageDecodeError; any other error is a bug and propagates. */
async function probeAtUploadOf(bytes: Uint8Array) {
  try {
    return await probeAtUpload(memoryByteSource(bytes));
  } catch (error) {
    if (error instanceof ImageDecodeError) return error;
    throw error;
  }
}

async function agreement(bytes: Uint8Array): Promise<string | null> {
  const upload = await probeAtUploadOf(bytes);
  let engine: ReturnType<typeof probeInEngine>;
  try {
    decodeImage(bytes);
    engine = probeInEngine(bytes);
  } catch (error) {
    if (error instanceof ImageDecodeError) return null; // not decodable: nothing to agree on
    throw error;
  }
  if (upload instanceof ImageDecodeError) return `probe refuses what the engine decodes: ${upload.message}`;
  const expected = {
    format: engine.format,
    width: engine.width,
    height: engine.height,
    channels: engine.channels,
    bitDepth: engine.bitDepth,
    planes: engine.pages,
    pixelSize: engine.pixelSize,
    pixelSizeWarning: engine.pixelSizeWarning,
    channelNames: engine.channelNames,
  };
  return JSON.stringify(upload) === JSON.stringify({ ...upload, ...expected })
    ? null
    : `probe says ${JSON.stringify(upload)}, engine ${JSON.stringify(expected)}`;
}

describe("the upload probe agrees with the engine", () => {
  const seeds = fuzzSeeds();
  for (const seed of seeds) {
    it(`on ${seed.name}`, async () => {
      expect(await agreement(seed.bytes)).toBeNull();
    });
  }

  it(`on ${ITERATIONS} mutations (agreeing on those that still decode)`, { timeout: 30_000 + ITERATIONS * 20 }, async () => {
    const disagreements: string[] = [];
    for (let i = 0; i < ITERATIONS && disagreements.length < 10; i++) {
      const seed = seeds[i % seeds.length]!;
      const { bytes, steps } = mutate(seed.bytes, 31 * 1_000_003 + i);
      const found = await agreement(seed.name.startsWith("PNG") ? repairPngChecksums(bytes, crc32) : bytes);
      if (found) disagreements.push(`case ${i} (${seed.name}: ${steps.join(", ")}): ${found}`);
    }
    expect(disagreements).toEqual([]);
  });
});
