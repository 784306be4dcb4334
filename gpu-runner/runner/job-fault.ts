// Whose fault a failed job is, decided by the error's type (never its message): the runner reports
// it with the failure and the worker decides from it whether the job is tried again.
import type { JobFault } from "../../schema/db.ts";
import { RoiArtifactError } from "../../schema/roi-artifact.ts";
import { ImageDecodeError } from "../../common/decode/index.ts";
import { InputError, ModelError } from "../engine/faults.ts";
import { TransientError } from "../../common/retry.ts";

export function faultOf(error: unknown): JobFault {
  if (error instanceof InputError || error instanceof ImageDecodeError || error instanceof RoiArtifactError) return "input";
  if (error instanceof ModelError) return "model";
  // The worker or storage could not be reached, or answered 5xx, past every retry.
  if (error instanceof TransientError) return "service";
  // Stopped (shutting down, JobStopped), or anything unforeseen here: another runner may well succeed.
  return "runner";
}
