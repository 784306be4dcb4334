// `train [--model <base>] <image-id>...`: POST /job/training, and with --wait the job followed to its
// end: the new model's id and how it scored against its base.
import { parseArgs } from "node:util";
import type { JobAcknowledgement, JobRecord, SegmentationPage, TrainingMetrics } from "../../schema/api-records.ts";
import { trainingBase } from "../../schema/model-recommendations.ts";
import type { Modality } from "../../schema/modality.ts";
import { CONNECTION_HELP, CONNECTION_OPTIONS, connect, UsageError } from "../connection.ts";
import { positiveInteger, positiveNumber } from "../flags.ts";
import { formatSeconds } from "../format.ts";
import { pollJob } from "../jobs.ts";
import { createDisplay } from "../progress.ts";
import { learnedNothing, scoredOn, trainingOutcomeText, unverified } from "../../schema/training-outcome.ts";

export const TRAIN_HELP = `npm run client -- train [--model <base-id>] <image-id>... [--segmentations ID,...] [--name N] [--steps N] [--seed N] [--wait [--allow-no-gain]]

Fine-tunes a model on your segmented images (predicted, or corrected and imported with
\`npm run client -- import\`) and prints the training's job id. Exits 0 once it is submitted, or
with --wait, only if the training COMPLETED and its model beat the base on the held-out images
by more than noise (the gain's 95% interval above zero).

  --model ID            the model to start from (see \`npm run client -- models\`); by default the
                        public model recommended for the images' modality, as the service read it
                        when it segmented them (cpsam-histology for stained histology), printed
                        with the reason
  --segmentations IDS   comma-separated segmentations to learn from, at most one per image; an image
                        not named here is learned from its most recent segmentation
  --name N              the trained model's name
  --steps N             training steps (default: the runner's time budget)
  --seed N              seeds which regions are trained on and which judged (default 1): the same
                        annotations and seed split alike; another seed draws another split
  --wait                follow the training to its end, then print the new model's id and its
                        scores (AP@0.5 and AP@0.75) beside the base model's. Ctrl-C stops the
                        waiting, not the training
  --allow-no-gain       with --wait, exit 0 also when fine-tuning did not beat the base (the new
                        model is then the base's weights, marked "same as base"), or beat it by
                        what could be noise (the new model keeps its weights, marked "unverified")
  --poll SECONDS        first wait between status polls with --wait (default 2; grows to 15)

${CONNECTION_HELP}`;

const TRAIN_OPTIONS = {
  ...CONNECTION_OPTIONS,
  model: { type: "string" },
  segmentations: { type: "string" },
  name: { type: "string" },
  steps: { type: "string" },
  seed: { type: "string" },
  wait: { type: "boolean" },
  "allow-no-gain": { type: "boolean" },
  poll: { type: "string", default: "2" },
} as const;

const score = (ap: number | null) => (ap === null ? "-" : ap.toFixed(3));

function metricsLines(metrics: TrainingMetrics): string[] {
  return [
    `Scores (on ${scoredOn(metrics)}${metrics.seed === undefined ? "" : `; split by seed ${metrics.seed}`}):`,
    `  base        AP@0.5 ${score(metrics.base.ap50)}  AP@0.75 ${score(metrics.base.ap75)}`,
    `  fine-tuned  AP@0.5 ${score(metrics.fine_tuned.ap50)}  AP@0.75 ${score(metrics.fine_tuned.ap75)}  (weights of step ${metrics.chosen_step})`,
    metrics.note,
  ];
}

/** The modality the service read in an image: that of its most recent segmentation that records one (imports do not). */
async function modalityOf(http: ReturnType<typeof connect>, imageId: string): Promise<Modality | null> {
  const page = await http.json<SegmentationPage>("GET", `/segmentations?image_id=${encodeURIComponent(imageId)}&limit=50`);
  return page.items.find((segmentation) => segmentation.modality)?.modality?.modality ?? null;
}

export async function trainCommand(args: string[], out: NodeJS.WritableStream): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: TRAIN_OPTIONS, allowPositionals: true });
  if (values.help) {
    out.write(`${TRAIN_HELP}\n`);
    return 0;
  }
  if (positionals.length === 0) throw new UsageError("Name at least one image to train on");
  const body: Record<string, unknown> = { image_ids: positionals };
  if (values.segmentations !== undefined) {
    const ids = values.segmentations
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    if (ids.length === 0) throw new UsageError("--segmentations takes comma-separated segmentation ids");
    body.segmentation_ids = ids;
  }
  if (values.name !== undefined) body.name = values.name;
  if (values.steps !== undefined) body.steps = positiveInteger(values.steps, "--steps");
  if (values.seed !== undefined) body.seed = positiveInteger(values.seed, "--seed");
  const pollMs = positiveNumber(values.poll, "--poll") * 1000;

  const display = createDisplay(out);
  const http = connect(values, { log: (m) => display.log(`retrying: ${m}`) });
  if (values.model) body.model_id = values.model;
  else {
    const base = trainingBase(await Promise.all(positionals.map((id) => modalityOf(http, id))));
    body.model_id = base.modelId;
    display.log(`Base model: ${base.modelId} (${base.reason}; --model names another)`);
  }
  const ack = await http.json<JobAcknowledgement>("POST", "/job/training", { json: body });
  display.log(ack.status === "skipped" ? `The same training is already queued: job ${ack.job_id} (${ack.reason})` : `Training job ${ack.job_id} submitted`);
  if (!values.wait) {
    display.log(`Follow it with --wait, or GET /job/${ack.job_id}`);
    return 0;
  }

  const started = Date.now();
  const bar = display.bar("training", 1, "fraction");
  let job: JobRecord;
  try {
    job = await pollJob(http, ack.job_id, {
      pollMs,
      maxPollMs: Math.max(pollMs, 15_000),
      onUpdate: (j) => bar.update(j.progress, j.stage ?? j.status),
    });
  } finally {
    display.close();
  }
  const took = formatSeconds(Date.now() - started);
  if (job.status === "FAILED") {
    out.write(`Training job ${job.job_id} FAILED after ${took}: ${job.reason ?? "no reason given"}\n`);
    return 1;
  }
  out.write(`Training job ${job.job_id} COMPLETED in ${took}\nNew model: ${job.result_model_id}\n`);
  if (job.metrics) out.write(`${metricsLines(job.metrics).join("\n")}\n${trainingOutcomeText(job.metrics)}\n`);
  if (job.metrics && learnedNothing(job.metrics)) {
    const why =
      job.metrics.evidence?.verdict === "too_few_to_tell"
        ? `the scores on ${scoredOn(job.metrics)} could not tell fine-tuning's gain over ${job.model_id} from noise`
        : `fine-tuning did not beat ${job.model_id} on ${scoredOn(job.metrics)}`;
    out.write(`Nothing was learned: ${why}, so model ${job.result_model_id} is ${job.model_id}'s weights (listed as "same as base").\n`);
    return values["allow-no-gain"] ? 0 : 1;
  }
  if (job.metrics && unverified(job.metrics)) {
    out.write(
      `Unverified: model ${job.result_model_id} scored above ${job.model_id} by what could be noise; segment a few of your images with both (--model) and compare before relying on it.\n`,
    );
    return values["allow-no-gain"] ? 0 : 1;
  }
  out.write(`Segment with it: npm run client -- segment <images> --out <dir> --model ${job.result_model_id}\n`);
  return 0;
}
