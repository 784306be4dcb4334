// How the fine-tuning benches split one modality of dsb2018-train into images a user annotates and
// images they segment later: only images the base model's training record held out for validation
// (the base has never seen them, as a user's images), sorted by name so every run splits the same
// way, rotated to give other splits of the same set.
import { readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";

interface FineTuneSplitRequest {
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

interface SlideSplitRequest {
  /** A folder of crops named <slide>_<crop> (TNBC: tnbc-01_1), images/ and labels/. */
  data: string;
  /** The slides whose crops a user annotates, e.g. ["tnbc-02", "tnbc-03"]. */
  trainSlides: string[];
  /** At most this many crops trained on, taken from the slides in turn. */
  maxTrain: number;
  /** The slides whose crops are scored (default: every other slide), e.g. those the base never learned. */
  testSlides?: string[];
}

/** The slide a crop comes from: its name up to the last "_". */
function slideOf(name: string): string {
  const mark = name.lastIndexOf("_");
  return mark < 0 ? name : name.slice(0, mark);
}

/**
 * A split by slide, never by crop (crops of one slide share a patient, a stain and a scanner): up
 * to `maxTrain` crops of the training slides, taken from each slide in turn, and every crop of the
 * other slides (or of `testSlides`) to score.
 */
export function slideSplit(request: SlideSplitRequest): { trainNames: string[]; testNames: string[] } {
  const names = readdirSync(join(request.data, "images"))
    .map((file) => file.replace(/\.[^.]+$/, ""))
    .sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
  const slides = new Set(names.map(slideOf));
  const unknown = [...request.trainSlides, ...(request.testSlides ?? [])].find((slide) => !slides.has(slide));
  if (unknown !== undefined) throw new Error(`no crops of slide ${unknown} in ${request.data} (slides: ${[...slides].join(", ")})`);
  const bySlide = request.trainSlides.map((slide) => names.filter((name) => slideOf(name) === slide));
  const trainNames: string[] = [];
  for (let round = 0; trainNames.length < request.maxTrain && bySlide.some((crops) => round < crops.length); round++)
    for (const crops of bySlide) if (round < crops.length && trainNames.length < request.maxTrain) trainNames.push(crops[round]!);
  const scored = (slide: string) => !request.trainSlides.includes(slide) && (request.testSlides === undefined || request.testSlides.includes(slide));
  const testNames = names.filter((name) => scored(slideOf(name)));
  if (testNames.length === 0) throw new Error("none is left to score: every slide scored would be a training slide");
  return { trainNames, testNames };
}
