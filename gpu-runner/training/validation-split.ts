// A fixed, seeded hold-out: the same fraction of every set, chosen by a seeded shuffle of the
// sorted ids, so the split is reproducible from (ids, fraction, seed, units) alone. Where images of
// a set share a source (the crops of one slide share a patient, a stain and a scanner), the set is
// split by that source instead, whole units at a time, so no held-out crop has a sibling in training.
import { setOfImage } from "./labelled-images.ts";
import { SeededRandom } from "./random.ts";

/** How one set is held out by source: `pattern` matched against an image's name gives its unit (e.g. /^tnbc-\d+/ the slide). */
export interface HoldOutUnits {
  set: string;
  pattern: RegExp;
  /** The share of this set's units held out (absent: the split's own fraction). */
  fraction?: number;
}

/** Each set's units in a seeded order; a unit lists its ids. A set without a rule has one unit per image. */
function shuffledUnitsBySet(ids: Iterable<string>, seed: number, rules: readonly HoldOutUnits[]): { set: string; units: string[][] }[] {
  const bySet = new Map<string, Map<string, string[]>>();
  for (const id of [...ids].sort()) {
    const set = setOfImage(id);
    const rule = rules.find((r) => r.set === set);
    const name = id.slice(set.length + 1);
    const unit = rule ? (rule.pattern.exec(name)?.[0] ?? name) : id;
    const units = bySet.get(set) ?? new Map<string, string[]>();
    units.set(unit, [...(units.get(unit) ?? []), id]);
    bySet.set(set, units);
  }
  return [...bySet].map(([set, unitMap]) => {
    const units = [...unitMap.values()];
    const random = new SeededRandom(seed);
    for (let i = units.length - 1; i > 0; i--) {
      const j = random.below(i + 1);
      [units[i], units[j]] = [units[j]!, units[i]!];
    }
    return { set, units };
  });
}

/** Seed offset of the selection/report draw, so it is not the hold-out's own shuffle again. */
const REPORT_DRAW = 0x5e1ec7;

/**
 * The held-out images in two parts per set: `selection` (at least half of its units) may choose
 * anything (a training step, thresholds, mask defaults); `report` is scored for the figures
 * reported and chooses nothing, so those figures are not flattered by the choosing.
 */
export function selectionAndReport(held: Iterable<string>, seed: number, rules: readonly HoldOutUnits[] = []): { selection: Set<string>; report: Set<string> } {
  const selection = new Set<string>();
  const report = new Set<string>();
  for (const { units } of shuffledUnitsBySet(held, seed + REPORT_DRAW, rules)) {
    const selected = Math.ceil(units.length / 2);
    units.forEach((unit, i) => {
      for (const id of unit) (i < selected ? selection : report).add(id);
    });
  }
  return { selection, report };
}

export function validationIds(ids: string[], fraction: number, seed: number, rules: readonly HoldOutUnits[] = []): Set<string> {
  for (const f of [fraction, ...rules.map((r) => r.fraction ?? fraction)])
    if (!(f >= 0 && f < 1)) throw new Error(`validation fraction must be in [0, 1), got ${f}`);
  const held = new Set<string>();
  for (const { set, units } of shuffledUnitsBySet(ids, seed, rules)) {
    const setFraction = rules.find((r) => r.set === set)?.fraction ?? fraction;
    const count = setFraction === 0 ? 0 : Math.max(1, Math.round(setFraction * units.length));
    for (const unit of units.slice(0, Math.min(count, units.length - 1))) for (const id of unit) held.add(id);
  }
  return held;
}
