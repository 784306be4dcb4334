// The fine-tuning benches' split of a dataset: only the base's validation images of one modality,
// sorted so every run splits alike, rotated for another split; too few images are refused.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fineTuneSplit, slideSplit } from "../../bench/finetune-split.ts";

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

describe("slideSplit", () => {
  function crops(): string {
    const data = join(mkdtempSync(join(tmpdir(), "slides-")), "tnbc");
    mkdirSync(join(data, "images"), { recursive: true });
    const counts = { "tnbc-01": 3, "tnbc-02": 2, "tnbc-03": 4, "tnbc-10": 1 };
    for (const [slide, count] of Object.entries(counts)) for (let c = 1; c <= count; c++) writeFileSync(join(data, "images", `${slide}_${c}.png`), "");
    return data;
  }

  it("trains on crops of the named slides, taken in turn up to the limit, and scores every crop of the others", () => {
    expect(slideSplit({ data: crops(), trainSlides: ["tnbc-01", "tnbc-03"], maxTrain: 5 })).toEqual({
      trainNames: ["tnbc-01_1", "tnbc-03_1", "tnbc-01_2", "tnbc-03_2", "tnbc-01_3"],
      testNames: ["tnbc-02_1", "tnbc-02_2", "tnbc-10_1"],
    });
  });

  it("scores only the slides named, where the base learned the others", () => {
    expect(slideSplit({ data: crops(), trainSlides: ["tnbc-03"], testSlides: ["tnbc-02", "tnbc-10"], maxTrain: 8 })).toEqual({
      trainNames: ["tnbc-03_1", "tnbc-03_2", "tnbc-03_3", "tnbc-03_4"],
      testNames: ["tnbc-02_1", "tnbc-02_2", "tnbc-10_1"],
    });
  });

  it("refuses a slide that is not there, and a split that leaves nothing to score", () => {
    const data = crops();
    expect(() => slideSplit({ data, trainSlides: ["tnbc-04"], maxTrain: 8 })).toThrow(/no crops of slide tnbc-04/);
    expect(() => slideSplit({ data, trainSlides: ["tnbc-01", "tnbc-02", "tnbc-03", "tnbc-10"], maxTrain: 8 })).toThrow(/none is left/);
    expect(() => slideSplit({ data, trainSlides: ["tnbc-01"], testSlides: ["tnbc-01"], maxTrain: 8 })).toThrow(/none is left/);
    expect(() => slideSplit({ data, trainSlides: ["tnbc-01"], testSlides: ["tnbc-11"], maxTrain: 8 })).toThrow(/no crops of slide tnbc-11/);
  });
});
