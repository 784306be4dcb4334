// A fixed, seeded hold-out: the same fraction of every set, chosen by a seeded shuffle of the
// sorted ids, so the split is reproducible from (ids, fraction, seed) alone.
import { setOfImage } from "./labelled-images.ts";
import { SeededRandom } from "./random.ts";

function shuffledBySet(ids: Iterable<string>, seed: number): string[][] {
  const bySet = new Map<string, string[]>();
  for (const id of [...ids].sort()) {
    const set = setOfImage(id);
    bySet.set(set, [...(bySet.get(set) ?? []), id]);
  }
  return [...bySet.values()].map((members) => {
    const random = new SeededRandom(seed);
    for (let i = members.length - 1; i > 0; i--) {
      const j = random.below(i + 1);
      [members[i], members[j]] = [members[j], members[i]];
    }
    return members;
  });
}

/** Seed offset of the selection/report draw, so it is not the hold-out's own shuffle again. */
const REPORT_DRAW = 0x5e1ec7;

/**
 * The held-out images in two parts per set: `selection` (at least half) may choose anything (a
 * training step, thresholds, mask defaults); `report` is scored for the figures reported and
 * chooses nothing, so those figures are not flattered by the choosing.
 */
export function selectionAndReport(held: Iterable<string>, seed: number): { selection: Set<string>; report: Set<string> } {
  const selection = new Set<string>();
  const report = new Set<string>();
  for (const members of shuffledBySet(held, seed + REPORT_DRAW)) {
    const selected = Math.ceil(members.length / 2);
    members.forEach((id, i) => (i < selected ? selection : report).add(id));
  }
  return { selection, report };
}

export function validationIds(ids: string[], fraction: number, seed: number): Set<string> {
  if (!(fraction >= 0 && fraction < 1)) throw new Error(`validation fraction must be in [0, 1), got ${fraction}`);
  const held = new Set<string>();
  for (const members of shuffledBySet(ids, seed)) {
    const count = fraction === 0 ? 0 : Math.max(1, Math.round(fraction * members.length));
    for (const id of members.slice(0, Math.min(count, members.length - 1))) held.add(id);
  }
  return held;
}
