// The mask-reconstruction flags shared by the segment and eval CLIs, named as the API's
// parameters (cellprob_threshold, flow_threshold, ...) with dashes.
import type { MaskParams } from "../engine/masks/compute-masks.ts";

export const MASK_FLAG_OPTIONS = {
  "cellprob-threshold": { type: "string" },
  "flow-threshold": { type: "string" },
  "min-size": { type: "string" },
  niter: { type: "string" },
} as const;

export const MASK_FLAGS_USAGE = "[--cellprob-threshold T] [--flow-threshold T] [--min-size N] [--niter N]";

type MaskFlagValues = { [flag in keyof typeof MASK_FLAG_OPTIONS]?: string };

/** The mask parameters the flags set; unset ones keep the engine's (Cellpose's) defaults. */
export function maskParamsFromFlags(values: MaskFlagValues): Partial<MaskParams> {
  const params: Partial<MaskParams> = {};
  if (values["cellprob-threshold"] !== undefined) params.cellprobThreshold = numberFlag(values["cellprob-threshold"], "--cellprob-threshold");
  if (values["flow-threshold"] !== undefined) params.flowThreshold = numberFlag(values["flow-threshold"], "--flow-threshold");
  if (values["min-size"] !== undefined) params.minSize = numberFlag(values["min-size"], "--min-size");
  if (values.niter !== undefined) params.niter = numberFlag(values.niter, "--niter");
  return params;
}

/**
 * Eval's sweeps: each flag may list values ("0,0.4,0.8"); every combination of them, first value
 * of each first. Unset flags keep the engine's defaults.
 */
export function maskParamGridFromFlags(values: MaskFlagValues): Partial<MaskParams>[] {
  let grid: Partial<MaskParams>[] = [{}];
  for (const flag of Object.keys(MASK_FLAG_OPTIONS) as (keyof typeof MASK_FLAG_OPTIONS)[]) {
    const listed = values[flag];
    if (listed === undefined) continue;
    const choices = listed.split(",").map((one) => maskParamsFromFlags({ [flag]: one }));
    grid = grid.flatMap((combination) => choices.map((choice) => ({ ...combination, ...choice })));
  }
  return grid;
}

export function numberFlag(text: string, option: string): number {
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value)) throw new Error(`${option} expects a number, got "${text}"`);
  return value;
}
