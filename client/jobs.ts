// Following a job (GET /job/{job_id}) to its end, as pollPrediction follows a prediction: the
// same growing wait between polls, reset whenever the status or progress moves.
import type { JobRecord } from "../schema/api-records.ts";
import type { Http } from "./http.ts";
import { backoff, type WaitOptions } from "./predict.ts";

export async function pollJob(http: Http, jobId: string, options: WaitOptions & { onUpdate?: (job: JobRecord) => void }): Promise<JobRecord> {
  const pause = backoff(options);
  let last = "";
  for (;;) {
    options.checkpoint?.();
    const job = await http.json<JobRecord>("GET", `/job/${encodeURIComponent(jobId)}`);
    options.onUpdate?.(job);
    if (job.status === "COMPLETED" || job.status === "FAILED") return job;
    const seen = `${job.status} ${job.progress} ${job.stage}`;
    if (seen !== last) pause.reset();
    last = seen;
    await pause.next();
  }
}
