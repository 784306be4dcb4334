// Request bodies of the runner's API (/api/v1/internal), shared by the worker and the GPU runner.
import { z } from "zod";

export const leaseBody = z.object({
  runner_id: z.string().min(1).max(200),
  /** Long poll: wait up to this long for a job before answering 204. */
  wait_seconds: z.number().min(0).max(20).default(0),
  lease_seconds: z.number().int().min(10).max(3600).optional(),
});

const leaseToken = z.string().min(1);

export const heartbeatBody = z.object({
  lease_token: leaseToken,
  progress: z.number().min(0).max(1).optional(),
  stage: z.string().min(1).max(50).optional(),
});

export const urlsBody = z.object({ lease_token: leaseToken });

export const predictionResult = z.object({
  roi_count: z.number().int().min(0),
  confluency: z.number().min(0).max(1),
  width: z.number().int().min(1),
  height: z.number().int().min(1),
  timings: z.record(z.string(), z.number()).optional(),
});

export const trainingResult = z.object({
  steps: z.number().int().min(0),
  validation: z.record(z.string(), z.unknown()).optional(),
  timings: z.record(z.string(), z.number()).optional(),
});

export const completeBody = z.object({
  lease_token: leaseToken,
  result: z.union([predictionResult, trainingResult]),
});

export const failBody = z.object({
  lease_token: leaseToken,
  reason: z.string().min(1).max(2000),
  /** True for transient trouble (worth another attempt), false for the job's own fault. */
  retryable: z.boolean().default(false),
});

export type PredictionResult = z.infer<typeof predictionResult>;
export type TrainingResult = z.infer<typeof trainingResult>;
