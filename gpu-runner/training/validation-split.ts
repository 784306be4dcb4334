// A fixed, seeded hold-out: the same fraction of every set, chosen by a seeded shuffle of the
// sorted ids, so the split is reproducible from (ids, fraction, seed) alone.
import { setOfImage } from "./labelled-images.ts";
import { SeededRandom } from "./random.ts";

export function validationIds(ids: string[], fraction: number, seed: number): Set<string> {
  if (!(fraction >= 0 && fraction < 1)) throw new Error(`validation fraction must be in [0, 1), got ${fraction}`);
  const bySet = new Map<string, string[]>();
  for (const id of [...ids].sort()) {
    const set = setOfImage(id);
    bySet.set(set, [...(bySet.get(set) ?? []), id]);
  }
  const held = new Set<string>();
  for (const members of bySet.values()) {
    const random = new SeededRandom(seed);
    for (let i = members.length - 1; i > 0; i--) {
      const j = random.below(i + 1);
      [members[i], members[j]] = [members[j], members[i]];
    }
    const count = fraction === 0 ? 0 : Math.max(1, Math.round(fraction * members.length));
    for (const id of members.slice(0, Math.min(count, members.length - 1))) held.add(id);
  }
  return held;
}
