// The fine-tuning benches' split of a dataset: only the base's validation images of one modality,
// sorted so every run splits alike, rotated for another split; too few images are refused.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fineTuneSplit } from "../../bench/finetune-split.ts";

function dataset(): { data: string; record: string } {
  const root = mkdtempSync(join(tmpdir(), "split-"));
  const data = join(root, "dsb2018-train");
  mkdirSync(data);
  const rows = ["e", "a", "d", "b", "c", "f"].map((name) => `${name},histology,320,256,10`);
  writeFileSync(join(data, "modality.csv"), ["name,modality,width,height,objects", ...rows, "g,fluorescence,256,256,5"].join("\n"));
  const record = join(root, "training-record.json");
  const validation = ["a", "b", "c", "d", "e"].map((name) => `dsb2018-train/histology/${name}`);
  writeFileSync(record, JSON.stringify({ images: { validation: [...validation, "dsb2018-train/fluorescence/g", "bbbc039/f"] } }));
  return { data, record };
}

describe("fineTuneSplit", () => {
  it("trains on the first held-out names of the modality, sorted, and scores the next ones", () => {
    const { data, record } = dataset();
    expect(fineTuneSplit({ data, heldOutRecord: record, modality: "histology", train: 2, test: 3, rotate: 0 })).toEqual({
      trainNames: ["a", "b"],
      testNames: ["c", "d", "e"],
    });
  });

  it("rotates the sorted names, wrapping round, for another split of the same set", () => {
    const { data, record } = dataset();
    expect(fineTuneSplit({ data, heldOutRecord: record, modality: "histology", train: 2, test: 2, rotate: 4 })).toEqual({
      trainNames: ["e", "a"],
      testNames: ["b", "c"],
    });
  });

  it("takes every image of the modality without a record, and refuses a set too small for the split", () => {
    const { data, record } = dataset();
    expect(fineTuneSplit({ data, heldOutRecord: "none", modality: "histology", train: 3, test: 3, rotate: 0 }).testNames).toEqual(["d", "e", "f"]);
    expect(() => fineTuneSplit({ data, heldOutRecord: record, modality: "histology", train: 3, test: 3, rotate: 0 })).toThrow(
      "histology: 5 images held out by the base's training record, fewer than --train 3 + --test 3",
    );
    expect(() => fineTuneSplit({ data, heldOutRecord: record, modality: "histology", train: 1, test: 1, rotate: -1 })).toThrow(/--rotate/);
  });
});
