// The part plan of a resumable upload: every part is one request through Cloudflare, so no part may
// exceed the smallest zone body limit (100 MB on the Free and Pro plans), whatever the file's size.
import { describe, expect, it } from "vitest";
import { MAX_PART_SIZE, MAX_RESUMABLE_SIZE, partSizeFor } from "../../worker/services/uploads.ts";

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const CLOUDFLARE_FREE_PLAN_BODY_LIMIT = 100_000_000;

describe("resumable upload part sizes", () => {
  it("are 8 MiB for files up to 10,000 such parts (every file the default 5 GiB cap admits)", () => {
    for (const size of [1, 8 * MiB, 4 * GiB, 5 * GiB, 10_000 * 8 * MiB]) expect(partSizeFor(size)).toBe(8 * MiB);
  });

  it("grow in whole MiB to keep within 10,000 parts, and never exceed Cloudflare's 100 MB body limit", () => {
    expect(MAX_PART_SIZE).toBeLessThanOrEqual(CLOUDFLARE_FREE_PLAN_BODY_LIMIT);
    for (const size of [100 * GiB, 500 * GiB, MAX_RESUMABLE_SIZE - 1, MAX_RESUMABLE_SIZE]) {
      const part = partSizeFor(size);
      expect(part % MiB).toBe(0);
      expect(Math.ceil(size / part)).toBeLessThanOrEqual(10_000);
      expect(part).toBeLessThanOrEqual(MAX_PART_SIZE);
    }
  });

  it("refuse a file that would need larger parts", () => {
    expect(() => partSizeFor(MAX_RESUMABLE_SIZE + 1)).toThrow(RangeError);
  });
});
