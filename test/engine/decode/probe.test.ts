// The one image probe (common/decode/probe.ts) against the decoder it speaks for: whatever
// decodeImage decodes, the probe accepts with the same format, size, channels and depth, read
// either way it runs (on the bytes, as the engine does, and through ranged reads by regions, as
// the worker's upload probe does), and both ways give the same answer in full (planes, pixel size,
// channel names). On the valid seed files and on every mutation of them that still decodes. (The
// other way round the probe may accept more: it reads headers only, so damaged pixel data passes
// it.) On every mutation, the probe answers or throws an ImageDecodeError, never another error.
import { describe, expect, it } from "vitest";
import { bytesSource } from "../../../common/decode/byte-source.ts";
import { decodeImage, ImageDecodeError, type ImageProbe, probeImage, probeImageSource } from "../../../common/decode/index.ts";
import { crc32 } from "../../../common/crc32.ts";
import { fuzzSeeds } from "../helpers/fuzz-seeds.ts";
import { mutate, repairPngChecksums } from "../helpers/mutate.ts";

const ITERATIONS = Number(process.env.FUZZ_ITERATIONS ?? 600);

/** The probe's answer, or its ImageDecodeError; any other error is a bug and propagates. */
async function probed(probe: () => ImageProbe | Promise<ImageProbe>): Promise<ImageProbe | ImageDecodeError> {
  try {
    return await probe();
  } catch (error) {
    if (error instanceof ImageDecodeError) return error;
    throw error;
  }
}

async function agreement(bytes: Uint8Array): Promise<string | null> {
  const upload = await probed(() => probeImageSource(bytesSource(bytes), { regions: true }));
  const inMemory = await probed(() => probeImage(bytes));
  let decoded: ReturnType<typeof decodeImage>;
  try {
    decoded = decodeImage(bytes);
  } catch (error) {
    if (error instanceof ImageDecodeError) return null; // not decodable: nothing to agree on
    throw error;
  }
  if (upload instanceof ImageDecodeError) return `the upload's probe refuses what the engine decodes: ${upload.message}`;
  if (inMemory instanceof ImageDecodeError) return `the probe on bytes refuses what the engine decodes: ${inMemory.message}`;
  if (JSON.stringify(upload) !== JSON.stringify(inMemory)) return `by ranged reads ${JSON.stringify(upload)}, on bytes ${JSON.stringify(inMemory)}`;
  const expected = { width: decoded.width, height: decoded.height, channels: decoded.channels, bitDepth: decoded.bitDepth };
  const { width, height, channels, bitDepth } = upload;
  return JSON.stringify({ width, height, channels, bitDepth }) === JSON.stringify(expected)
    ? null
    : `probe says ${JSON.stringify(upload)}, decoder ${JSON.stringify(expected)}`;
}

describe("the probe agrees with the decoder, on bytes and through ranged reads", () => {
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

describe("a file the readers do not read", () => {
  const refusal = (bytes: Uint8Array) => {
    try {
      probeImage(bytes);
    } catch (error) {
      expect(error).toBeInstanceOf(ImageDecodeError);
      expect((error as ImageDecodeError).kind).toBe("unsupported");
      return (error as Error).message;
    }
    throw new Error("the probe accepted it");
  };
  const withSignature = (at: number, signature: number[] | string, size = 512) => {
    const bytes = new Uint8Array(size);
    bytes.set(typeof signature === "string" ? [...signature].map((c) => c.charCodeAt(0)) : signature, at);
    return bytes;
  };

  it("is named by its signature, with a conversion that works", () => {
    expect(refusal(withSignature(0, "ZISRAWFILE"))).toBe(
      "File is not a supported image: expected TIFF (OME-TIFF, whole-slide TIFFs), DICOM whole-slide, a zipped OME-Zarr, PNG or JPEG; this is Zeiss CZI: convert it to a pyramidal OME-TIFF with Bio-Formats (bfconvert -pyramid-resolutions 4 -tilex 512 -tiley 512 -compression JPEG image out.ome.tif)",
    );
    expect(refusal(withSignature(0, "ZISRAWFILE"))).toMatch(/this is Zeiss CZI: convert it to a pyramidal OME-TIFF with Bio-Formats \(bfconvert /);
    expect(refusal(withSignature(0, [0xda, 0xce, 0xbe, 0x0a]))).toMatch(/this is Nikon ND2/);
  });

  it("is refused in the same words without a name where its signature is unknown", () => {
    expect(refusal(withSignature(0, "just some text"))).toBe(
      "File is not a supported image: expected TIFF (OME-TIFF, whole-slide TIFFs), DICOM whole-slide, a zipped OME-Zarr, PNG or JPEG",
    );
    expect(refusal(new Uint8Array(0))).toBe(
      "File is not a supported image: expected TIFF (OME-TIFF, whole-slide TIFFs), DICOM whole-slide, a zipped OME-Zarr, PNG or JPEG",
    );
  });
});
