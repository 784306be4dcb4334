// Decoder fuzzing: seeded mutations of valid TIFF, PNG and JPEG files, each decoded in a worker
// with a limited heap. Every case must either decode to a sane image (its size, channel count and
// data agree with each other and with the probe) or throw the engine's ImageDecodeError; never
// another error, a crash, a hang, or a large allocation. Deterministic: the same FUZZ_SEED gives
// the same cases. `npm run fuzz:decode` runs 100,000 of them; FUZZ_ITERATIONS and FUZZ_SEED override.
import { afterAll, describe, expect, it } from "vitest";
import { DecodeSandbox, type DecodeOutcome } from "../helpers/decode-sandbox.ts";
import { fuzzSeeds } from "../helpers/fuzz-seeds.ts";
import { crc32 } from "../../../common/crc32.ts";
import { mutate, repairPngChecksums } from "../helpers/mutate.ts";

const ITERATIONS = Number(process.env.FUZZ_ITERATIONS ?? 600);
const SEED = Number(process.env.FUZZ_SEED ?? 15);
const TIME_BUDGET_MS = 2000;
const MEMORY_BUDGET = 64 * 1024 * 1024;

function problem(result: DecodeOutcome): string | null {
  if (result.outcome === "decoded" && !result.sane) return `decoded to an inconsistent image ${result.size}`;
  if (result.outcome !== "decoded" && result.outcome !== "decode-error") return `${result.outcome}: ${result.message}`;
  if (result.ms > TIME_BUDGET_MS) return `took ${Math.round(result.ms)} ms`;
  if (result.memoryGrowth > MEMORY_BUDGET) return `grew memory by ${Math.round(result.memoryGrowth / 2 ** 20)} MiB`;
  return null;
}

describe("decoder fuzzing", () => {
  const sandbox = new DecodeSandbox({ heapMb: 256, timeoutMs: 10_000 });
  afterAll(() => sandbox.close());
  const seeds = fuzzSeeds();

  it("decodes every seed file (the fuzz starts from valid files), and refuses the hostile ones", async () => {
    for (const seed of seeds) {
      const expected = seed.refused ? { outcome: "decode-error" } : { outcome: "decoded", sane: true };
      expect(await sandbox.decode(seed.bytes), seed.name).toMatchObject(expected);
    }
  });

  it(`survives ${ITERATIONS} mutated files (seed ${SEED}) with a sane image or an ImageDecodeError each`, { timeout: 60_000 + ITERATIONS * 100 }, async () => {
    const failures: string[] = [];
    const outcomes = { decoded: 0, "decode-error": 0 } as Record<string, number>;
    for (let i = 0; i < ITERATIONS; i++) {
      const caseSeed = SEED * 1_000_003 + i;
      const seed = seeds[i % seeds.length]!;
      const mutation = mutate(seed.bytes, caseSeed);
      // Three PNG cases in four get valid checksums again, so the chunk contents get fuzzed too.
      const repair = seed.name.startsWith("PNG") && i % 4 !== 0;
      const bytes = repair ? repairPngChecksums(mutation.bytes, crc32) : mutation.bytes;
      const steps = repair ? [...mutation.steps, "CRCs repaired"] : mutation.steps;
      const result = await sandbox.decode(bytes);
      outcomes[result.outcome] = (outcomes[result.outcome] ?? 0) + 1;
      const found = problem(result);
      if (found) failures.push(`case ${i} (${seed.name}; mutate seed ${caseSeed}: ${steps.join(", ")}): ${found}`);
      if (failures.length >= 20) break;
    }
    expect(failures).toEqual([]);
    // Both outcomes occur, so the mutations neither all break the files nor all miss the headers.
    expect(outcomes.decoded).toBeGreaterThan(0);
    expect(outcomes["decode-error"]).toBeGreaterThan(0);
  });
});
