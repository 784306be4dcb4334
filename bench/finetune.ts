// npm run bench:finetune: the human-in-the-loop workflow through the local stack, scored.
// For each image set: upload images, import their ground truth as corrected annotations
// (POST /segmentation), train with the default budget (POST /job/training), segment other images
// of the same kind with the base and the fine-tuned model, and score both against their ground
// truth. Prints base vs fine-tuned AP@0.5 and AP@0.75 on those unseen images, beside the
// training job's own held-out figures, and the base at the diameter the fine-tuned model used: a
// fine-tuned model knows its training objects' size, so this column tells what its weights add.
// Sets: images of one modality of dsb2018-train (modality.csv), taken only from the base model's
// validation split (its training record): the base has never seen them, as a user's images. Histology,
// where the base is weakest (cpsam 3: AP@0.5 0.64 on these images with the service's defaults), and
// fluorescence, where it is good (0.85); brightfield (3 validation images) on request with
// --held-out none. The first --train names (sorted, then --rotate d) train, the next --test are scored.
// --set tnbc: a stained-histology collection that no public model learned (TNBC, Naylor et al. 2018),
// split by slide (finetune-split.ts, slideSplit): up to --train crops of --train-slides train, and
// every crop of the other slides is scored.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { decode as decodePng } from "fast-png";
import { startStack } from "../scripts/local-stack.ts";
import { type Plan, PLANS } from "../schema/db.ts";
import { averagePrecision } from "../common/scoring/average-precision.ts";
import { fineTuneSplit, slideSplit } from "./finetune-split.ts";
import type { TrainingMetrics } from "../schema/api-records.ts";

const { values } = parseArgs({
  options: {
    data: { type: "string", default: "../shared/data/nuclei/dsb2018-train" },
    tnbc: { type: "string", default: "../shared/data/nuclei/tnbc" },
    "train-slides": { type: "string", default: "tnbc-02,tnbc-03" },
    "test-slides": { type: "string" },
    base: { type: "string", default: "cpsam" },
    plan: { type: "string", default: "free" },
    "held-out": { type: "string", default: "gpu-runner/models/cpsam/training-record.json" },
    set: { type: "string", multiple: true },
    train: { type: "string", default: "8" },
    test: { type: "string", default: "13" },
    steps: { type: "string" },
    rotate: { type: "string", default: "0" },
    seeds: { type: "string", default: "1" },
    help: { type: "boolean", default: false },
  },
});

if (values.help) {
  console.log(`npm run bench:finetune -- [--data <dsb2018-train dir>] [--base <public model id>] [--plan free|pro|enterprise] [--held-out <training-record.json>|none] [--set histology --set fluorescence] [--train N] [--test N] [--steps N]
  --plan      the organization's plan (default free: training bounded to 600 s; pro: 3600 s, with TRAINING_SECONDS raising the runner's 600-s default)
  --base      the public model fine-tuned and compared with (default cpsam; cpsam-large shares its hold-out)
  --held-out  use only the images this training record held out for validation (default: the base model's record); "none": every image
  --set       modalities of modality.csv to run (default: histology, where the base is weak, and fluorescence, where it is good; also brightfield),
              or tnbc: the TNBC folder (--tnbc <dir>), --train crops of --train-slides (default tnbc-02,tnbc-03) trained on, every crop of the other slides
              scored, or of --test-slides (cpsam-histology learned tnbc-01,04,05,06 and chose its weights on 02,03: score it on tnbc-07,tnbc-08)
  --train     images trained on per set (default 8); --test: unseen images scored per set (default 13; 21 histology images are held out)
  --steps   training steps; default: the runner's time budget (TRAINING_SECONDS, 600 s)
  --seeds   the trainings' seeds, comma-separated (default 1): one training per seed on the same annotations, each scored on the same unseen images
  --rotate  start the split N names further along the sorted list (wrapping round): another split of the same set, to choose a setting on one split and report it on another`);
  process.exit(0);
}

const sets = values.set ?? ["histology", "fluorescence"];
const baseModel = values.base;
function plan(name: string): Plan {
  const found = PLANS.find((p) => p === name);
  if (!found) throw new Error(`--plan must be one of ${PLANS.join(", ")}, got ${name}`);
  return found;
}
const trainCount = Number(values.train);
const testCount = Number(values.test);
const steps = values.steps === undefined ? undefined : Number(values.steps);
const rotate = Number(values.rotate);
const seeds = values.seeds.split(",").map(Number);
if (!seeds.every((seed) => Number.isInteger(seed) && seed >= 1)) throw new Error(`--seeds takes positive integers, got ${values.seeds}`);

/** The folder a set's images and labels are in. */
const dataOf = (set: string) => (set === "tnbc" ? values.tnbc : values.data);

/** A set's images trained on and scored: TNBC by slide, the others as fineTuneSplit draws them from dsb2018-train. */
function splitOf(set: string): { trainNames: string[]; testNames: string[] } {
  if (set === "tnbc")
    return slideSplit({
      data: values.tnbc,
      trainSlides: values["train-slides"].split(","),
      testSlides: values["test-slides"]?.split(","),
      maxTrain: trainCount,
    });
  return fineTuneSplit({ data: values.data, heldOutRecord: values["held-out"], modality: set, train: trainCount, test: testCount, rotate });
}

function truthOf(set: string, name: string): Uint32Array {
  const png = decodePng(readFileSync(join(dataOf(set), "labels", `${name}.png`)));
  return Uint32Array.from(png.data as ArrayLike<number>);
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const f3 = (x: number | null | undefined) => (x === null || x === undefined ? "  -  " : x.toFixed(3));

/** One image segmented and scored: AP at IoU 0.5 and 0.75, and the diameter it ran at. */
interface Score {
  ap50: number;
  ap75: number;
  diameter: number | null;
}

async function main() {
  const stack = await startStack({ plan: plan(values.plan) });
  const runner = stack.startRunner({
    RUNNER_ID: "bench-finetune",
    ...(process.env.TRAINING_SECONDS ? { TRAINING_SECONDS: process.env.TRAINING_SECONDS } : {}),
  });
  const call = async <T = Record<string, unknown>>(path: string, init: RequestInit = {}): Promise<T> => {
    for (;;) {
      const response = await fetch(stack.api + path, { ...init, headers: { Authorization: `Bearer ${stack.key}`, ...init.headers } });
      // Imports are measured two at a time per organization: a third waits its turn, as the client does.
      if (response.status === 429) {
        await response.body?.cancel();
        await new Promise((r) => setTimeout(r, 1000 * Number(response.headers.get("Retry-After") ?? 5)));
        continue;
      }
      if (!response.ok) throw new Error(`${init.method ?? "GET"} ${path}: ${response.status} ${await response.text()}`);
      return response.json() as Promise<T>;
    }
  };
  const postJson = (path: string, body: unknown) => call(path, { method: "POST", body: JSON.stringify(body), headers: { "Content-Type": "application/json" } });
  const postFile = async (path: string, file: string, fields: Record<string, string> = {}) => {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    form.append("file", new File([readFileSync(file)], file.split("/").at(-1)!));
    return call(path, { method: "POST", body: form });
  };
  const waitJob = async (id: string, onProgress?: (job: Record<string, unknown>) => void) => {
    for (;;) {
      const job = await call(`/job/${id}`);
      if (job.status === "COMPLETED") return job;
      if (job.status === "FAILED") throw new Error(`job ${id} failed: ${job.reason}`);
      onProgress?.(job);
      await new Promise((r) => setTimeout(r, 1000));
    }
  };
  /** Segments an image with a model and scores it against its ground truth. */
  const score = async (set: string, imageId: string, name: string, modelId: string, diameter?: number | null): Promise<Score> => {
    const { job_id } = await postJson("/job/prediction", { image_id: imageId, model_id: modelId, ...(diameter ? { params: { diameter } } : {}) });
    const done = await waitJob(job_id as string);
    const masks = decodePng(
      new Uint8Array(
        await (await fetch(`${stack.api}/export/${done.segmentation_id}/masks.png`, { headers: { Authorization: `Bearer ${stack.key}` } })).arrayBuffer(),
      ),
    );
    const [ap50, ap75] = averagePrecision(truthOf(set, name), Uint32Array.from(masks.data as ArrayLike<number>), [0.5, 0.75]).ap;
    const segmentation = await call<{ diameter: number | null }>(`/segmentation/${done.segmentation_id}`);
    return { ap50: ap50!, ap75: ap75!, diameter: segmentation.diameter }; // one AP per threshold asked for
  };

  const summary: string[] = [];
  try {
    for (const modality of sets) {
      const { trainNames, testNames } = splitOf(modality);
      const data = dataOf(modality);
      console.log(`\n${modality}: training on ${trainNames.length} images, scoring ${testNames.length} others`);

      const trainIds = [];
      for (const name of trainNames) {
        const { image } = await postFile("/upload", join(data, "images", `${name}.png`));
        const id = (image as { id: string }).id;
        await postFile("/segmentation", join(data, "labels", `${name}.png`), { image_id: id });
        trainIds.push(id);
      }
      const trainings = [];
      for (const seed of seeds) {
        const started = performance.now();
        const body = { model_id: baseModel, image_ids: trainIds, name: `bench-${modality}-seed-${seed}`, seed, ...(steps ? { steps } : {}) };
        const { job_id } = await postJson("/job/training", body);
        let lastShown = 0;
        const trained = await waitJob(job_id as string, (job) => {
          if (performance.now() - lastShown < 30_000) return;
          lastShown = performance.now();
          console.log(`  training (seed ${seed}): ${job.stage ?? "queued"} ${Math.round(Number(job.progress ?? 0) * 100)}%`);
        });
        const metrics = trained.metrics as TrainingMetrics | null;
        const record = await call<{ training: { steps: number; seconds: number } | null }>(`/models/${trained.result_model_id}`);
        console.log(
          `  seed ${seed}: trained in ${((performance.now() - started) / 1000).toFixed(0)} s (${record.training?.steps} steps in ${record.training?.seconds.toFixed(0)} s of training): ${metrics?.note ?? "no metrics reported"}`,
        );
        if (metrics) {
          console.log(
            `  the job's own figures (${metrics.evaluated_on}, ${metrics.evaluated_images} images, ${metrics.evaluated_regions ?? 0} regions${metrics.folds ? `, ${metrics.folds} folds` : ""}; ${metrics.evidence?.objects ?? 0} held-out objects, verdict ${metrics.evidence?.verdict ?? "none"}, weights of step ${metrics.chosen_step}${metrics.steps_on_all_regions ? `, its last ${metrics.steps_on_all_regions} on every region` : ""}): base AP@0.5 ${f3(metrics.base.ap50)} AP@0.75 ${f3(metrics.base.ap75)}, fine-tuned ${f3(metrics.fine_tuned.ap50)} ${f3(metrics.fine_tuned.ap75)}`,
          );
        }
        trainings.push({ seed, modelId: trained.result_model_id as string, metrics, seconds: record.training?.seconds ?? 0, scores: [] as Score[] });
      }

      const base: Score[] = [];
      const baseAtTuned: Score[] = [];
      console.log(
        `  unseen image                         base AP@0.5 AP@0.75 diameter   fine-tuned (seed ${seeds.join(", ")}) AP@0.5 AP@0.75 diameter   base at the first's diameter AP@0.5 AP@0.75`,
      );
      for (const name of testNames) {
        const { image } = await postFile("/upload", join(data, "images", `${name}.png`));
        const id = (image as { id: string }).id;
        const before = await score(modality, id, name, baseModel);
        base.push(before);
        const afters = [];
        for (const training of trainings) {
          const after = await score(modality, id, name, training.modelId);
          training.scores.push(after);
          afters.push(after);
        }
        // What the weights add: the base at the diameter the fine-tuned model settled on (a fine-tuned
        // model also knows its training objects' size, which alone helps where the base misjudges it).
        const sameSize = await score(modality, id, name, baseModel, afters[0]?.diameter);
        baseAtTuned.push(sameSize);
        const d = (x: number | null) => (x === null ? "-" : x.toFixed(1)).padStart(9);
        const tunedColumns = afters.map((after) => `${f3(after.ap50).padStart(8)}${f3(after.ap75).padStart(8)}${d(after.diameter)}`).join("");
        console.log(
          `  ${name.slice(0, 32).padEnd(36)}${f3(before.ap50).padStart(12)}${f3(before.ap75).padStart(8)}${d(before.diameter)}   ${tunedColumns}${f3(sameSize.ap50).padStart(20)}${f3(sameSize.ap75).padStart(8)}`,
        );
      }
      const [b50, b75] = [mean(base.map((s) => s.ap50)), mean(base.map((s) => s.ap75))];
      const [s50, s75] = [mean(baseAtTuned.map((s) => s.ap50)), mean(baseAtTuned.map((s) => s.ap75))];
      for (const { seed, metrics, seconds, scores } of trainings) {
        const [t50, t75] = [mean(scores.map((s) => s.ap50)), mean(scores.map((s) => s.ap75))];
        summary.push(
          `${`${modality} (${baseModel}) seed ${seed}`.padEnd(34)}${(metrics?.evidence?.verdict ?? "none").padStart(16)}${String(metrics?.evidence?.objects ?? 0).padStart(9)}${seconds.toFixed(0).padStart(8)}${f3(b50).padStart(8)}${f3(b75).padStart(9)}${f3(t50).padStart(13)}${f3(t75).padStart(9)}${`${t50 >= b50 ? "+" : ""}${(t50 - b50).toFixed(3)}`.padStart(12)}${f3(s50).padStart(20)}${f3(s75).padStart(9)}`,
        );
      }
    }
    console.log(`\nmean over the unseen images of each set (segmented with diameter "auto", as a user would)`);
    console.log(
      "set (base) seed                            verdict  judged  seconds  base AP@0.5 AP@0.75  fine-tuned AP@0.5 AP@0.75  change AP@0.5  base at the fine-tuned model's diameter AP@0.5 AP@0.75",
    );
    for (const row of summary) console.log(row);
  } finally {
    runner.kill("SIGTERM");
    await stack.stop();
  }
}

await main();
