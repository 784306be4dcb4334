// Reading a labelled dataset: the model's channel made as at inference (modality included), and a
// set that lists several modalities grouped by them, so sampling and validation treat each one as a set.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encode } from "fast-png";
import { afterAll, describe, expect, it } from "vitest";
import { readLabelledDirectory, setOfImage, variantSource } from "../../gpu-runner/training/labelled-images.ts";
import { COLOUR } from "../../gpu-runner/training/network-input.ts";
import { jitterStains } from "../../gpu-runner/training/stain-augment.ts";
import { validationIds } from "../../gpu-runner/training/validation-split.ts";
import { syntheticNuclei } from "./synthetic-nuclei.ts";

const root = mkdtempSync(join(tmpdir(), "labelled-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Writes <root>/<set>: `fluorescence` images of bright nuclei, then `brightfield` ones of dark nuclei on a bright field. */
function writeSet(set: string, fluorescence: number, brightfield: number, listModalities: boolean): string {
  const dir = join(root, set);
  mkdirSync(join(dir, "images"), { recursive: true });
  mkdirSync(join(dir, "labels"), { recursive: true });
  const rows = ["name,modality,width,height,objects"];
  for (let i = 0; i < fluorescence + brightfield; i++) {
    const isBrightfield = i >= fluorescence;
    const { image, labels } = syntheticNuclei(64, 64, 6, 40 + i);
    const pixels = Uint8Array.from(image, (v) => Math.max(0, Math.min(255, Math.round(isBrightfield ? 230 - 150 * v : 20 + 200 * v))));
    writeFileSync(join(dir, "images", `n${i}.png`), encode({ width: 64, height: 64, data: pixels, depth: 8, channels: 1 }));
    writeFileSync(join(dir, "labels", `n${i}.png`), encode({ width: 64, height: 64, data: Uint16Array.from(labels), depth: 16, channels: 1 }));
    rows.push(`n${i},${isBrightfield ? "brightfield" : "fluorescence"},64,64,1`);
  }
  if (listModalities) writeFileSync(join(dir, "modality.csv"), `${rows.join("\n")}\n`);
  return dir;
}

describe("a labelled dataset", () => {
  it("gives each image the channel the engine would make: brightfield inverted, so nuclei are bright", () => {
    const pairs = readLabelledDirectory(writeSet("plain", 1, 1, false));
    expect(pairs.map((p) => [p.id, p.modality])).toEqual([
      ["plain/n0", "fluorescence"],
      ["plain/n1", "brightfield"],
    ]);
    for (const pair of pairs) {
      let inside = 0,
        outside = 0,
        nInside = 0;
      pair.labels.forEach((label, i) => {
        if (!label) outside += pair.image[i]!;
        else {
          inside += pair.image[i]!;
          nInside++;
        }
      });
      expect(inside / nInside, pair.id).toBeGreaterThan(outside / (pair.labels.length - nInside));
    }
  });

  it("listing modalities in modality.csv groups the set's images by modality, for sampling and the validation split", () => {
    const pairs = readLabelledDirectory(writeSet("mixed", 4, 3, true));
    expect(new Set(pairs.map((p) => setOfImage(p.id)))).toEqual(new Set(["mixed/fluorescence", "mixed/brightfield"]));
    const held = [
      ...validationIds(
        pairs.map((p) => p.id),
        0.25,
        1,
      ),
    ];
    // One of each modality is held out, not 25% of the set as a whole.
    expect(held.map(setOfImage).sort()).toEqual(["mixed/brightfield", "mixed/fluorescence"]);
  });
});

describe("slide variants of stained images", () => {
  /** <root>/<set>: one image of purple nuclei on pink tissue (RGB), one of bright nuclei on black (gray). */
  function writeStainedSet(set: string): string {
    const dir = join(root, set);
    mkdirSync(join(dir, "images"), { recursive: true });
    mkdirSync(join(dir, "labels"), { recursive: true });
    const { image, labels } = syntheticNuclei(64, 64, 6, 7);
    const rgb = new Uint8Array(3 * 64 * 64);
    image.forEach((v, i) => rgb.set([230 - 140 * v, 170 - 110 * v, 200 - 50 * v].map(Math.round), 3 * i));
    writeFileSync(join(dir, "images", "stained.png"), encode({ width: 64, height: 64, data: rgb, depth: 8, channels: 3 }));
    const gray = Uint8Array.from(image, (v) => Math.round(20 + 200 * v));
    writeFileSync(join(dir, "images", "fluorescent.png"), encode({ width: 64, height: 64, data: gray, depth: 8, channels: 1 }));
    for (const name of ["stained", "fluorescent"])
      writeFileSync(join(dir, "labels", `${name}.png`), encode({ width: 64, height: 64, data: Uint16Array.from(labels), depth: 16, channels: 1 }));
    return dir;
  }

  it("adds the asked copies of each stained image only, with its labels and modality, named after it", () => {
    const made: string[] = [];
    const pairs = readLabelledDirectory(writeStainedSet("stained"), COLOUR, {
      count: 2,
      modality: "histology",
      make: (decoded, id, k) => {
        made.push(`${id}~${k}`);
        return jitterStains(decoded, [1 + 0.2 * k, 1, 1], [0, 0, 0]);
      },
    });
    expect(pairs.map((p) => [p.id, p.modality])).toEqual([
      ["stained/fluorescent", "fluorescence"],
      ["stained/stained", "histology"],
      ["stained/stained~1", "histology"],
      ["stained/stained~2", "histology"],
    ]);
    expect(made).toEqual(["stained/stained~1", "stained/stained~2"]);
    expect(pairs.map((p) => variantSource(p.id))).toEqual(["stained/fluorescent", "stained/stained", "stained/stained", "stained/stained"]);
    expect(pairs[2]!.labels).toBe(pairs[1]!.labels);
    expect(pairs[2]!.image).not.toEqual(pairs[1]!.image);
  });
});
