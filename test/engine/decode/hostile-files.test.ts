// The crafted hostile files of issue 15 (test/fixtures/hostile-images.ts) against the
// engine's decoder: each must end in an ImageDecodeError that names the problem, quickly and in
// little memory, inside a worker whose heap is limited (a decoder that allocated what the file
// asks for would crash that worker, not pass).
import { afterAll, describe, expect, it } from "vitest";
import { DecodeSandbox } from "../helpers/decode-sandbox.ts";
import { hostileFiles } from "../../fixtures/hostile-images.ts";

const TIME_BUDGET_MS = 2000;
const MEMORY_BUDGET = 64 * 1024 * 1024;

describe("decoding crafted hostile files", () => {
  const sandbox = new DecodeSandbox({ heapMb: 256, timeoutMs: 10_000 });
  afterAll(() => sandbox.close());

  for (const file of hostileFiles()) {
    it(`refuses ${file.name} with a clear ImageDecodeError, in under ${TIME_BUDGET_MS} ms and ${MEMORY_BUDGET >> 20} MiB`, async () => {
      const result = await sandbox.decode(file.bytes);
      expect(result, result.message).toMatchObject({ outcome: "decode-error" });
      expect(result.message).toMatch(file.error);
      expect(result.ms).toBeLessThan(TIME_BUDGET_MS);
      expect(result.memoryGrowth).toBeLessThan(MEMORY_BUDGET);
    });
  }
});
