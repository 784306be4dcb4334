// The upload probe: what a stored image's headers say, read through R2 range reads under a read
// budget, never the whole file. The probe itself is the shared one (common/decode/probe.ts), the
// rules the engine's decoders apply, read as the runner will read the image (by regions); this
// file only gives it the stored file's bytes and turns a spent budget into a refusal.
import { probeImageSource } from "../../common/decode/probe.ts";
import type { ImageProbe } from "../../common/decode/decoded-image.ts";
import { ImageDecodeError } from "../../schema/image-formats/index.ts";
import { type RangedReader, r2ByteSource, ReadBudgetError } from "./byte-source.ts";

// Exported for its test only (test/worker/hostile-uploads.test.ts).
/**
 * What a probe may read of a stored file: R2 requests (a Worker's subrequests are limited, and
 * each costs) and bytes. Enough for a few thousand contiguous TIFF directories or about a
 * thousand scattered ones, and a whole slide's block offsets and byte counts.
 */
export const PROBE_READ_BUDGET = { reads: 1000, bytes: 16 * 1024 * 1024 };

/** Probes the object stored under `key`, within PROBE_READ_BUDGET. */
export async function probeStoredObject(bucket: RangedReader, key: string, size: number): Promise<ImageProbe> {
  try {
    return await probeImageSource(r2ByteSource(bucket, key, size, PROBE_READ_BUDGET), { regions: true });
  } catch (error) {
    if (error instanceof ReadBudgetError) throw new ImageDecodeError(`Image headers are too scattered to read: ${error.message}`, "too-large");
    throw error;
  }
}
