// How the fine-tuning benches split one modality of dsb2018-train into images a user annotates and
// images they segment later: only images the base model's training record held out for validation
// (the base has never seen them, as a user's images), sorted by name so every run splits the same
// way, rotated to give other splits of the same set.
import { readFileSync } from "node:fs";
import { basename, join } from "node:path";

export interface FineTuneSplitRequest {
  /** The dsb2018-train folder (images/, labels/, modality.csv). */
  data: string;
  /** A training record whose validation images are the only ones used; "none": every image. */
  heldOutRecord: string;
  modality: string;
  train: number;
  test: number;
  /** Start this many names further along the sorted list, wrapping round. */
  rotate: number;
}

/** The base model's validation images of this dataset (record ids are "<dataset>/[<modality>/]<name>"), or undefined for every image. */
function heldOutNames(data: string, heldOutRecord: string): Set<string> | undefined {
  if (heldOutRecord === "none") return undefined;
  const record = JSON.parse(readFileSync(heldOutRecord, "utf8")) as { images: { validation: string[] } };
  const dataset = basename(data);
  return new Set(record.images.validation.filter((id) => id.startsWith(`${dataset}/`)).map((id) => id.split("/").at(-1)!));
}

/** The names trained on and the names scored, refused when the set has too few images. */
export function fineTuneSplit(request: FineTuneSplitRequest): { trainNames: string[]; testNames: string[] } {
  if (!(Number.isInteger(request.rotate) && request.rotate >= 0)) throw new Error(`--rotate must be a non-negative integer, got ${request.rotate}`);
  const heldOut = heldOutNames(request.data, request.heldOutRecord);
  const rows = readFileSync(join(request.data, "modality.csv"), "utf8").trim().split("\n").slice(1);
  const sorted = rows
    .map((row) => row.split(","))
    .filter(([name, m]) => m === request.modality && (heldOut === undefined || heldOut.has(name!)))
    .map(([name]) => name!)
    .sort();
  if (sorted.length < request.train + request.test)
    throw new Error(
      `${request.modality}: ${sorted.length} images${heldOut ? " held out by the base's training record" : ""}, fewer than --train ${request.train} + --test ${request.test}`,
    );
  const start = request.rotate % sorted.length;
  const names = [...sorted.slice(start), ...sorted.slice(0, start)];
  return { trainNames: names.slice(0, request.train), testNames: names.slice(request.train, request.train + request.test) };
}
