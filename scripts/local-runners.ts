// npm start's runners: RUNNERS=N of them (default 1), named local-1, local-2, ... in their leases.
// Each reads RUNNER_THREADS and the other runner variables (gpu-runner/runner/config.ts) from the
// environment, as a runner started alone does.

/** The environment each runner gets beyond `env`'s: its RUNNER_ID, and RUNNER_THREADS when set. */
export function localRunners(env: NodeJS.ProcessEnv): Record<string, string>[] {
  const value = env.RUNNERS?.trim() || "1";
  const count = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!(count >= 1)) throw new Error(`RUNNERS must be a whole number of runners, at least 1; got ${JSON.stringify(env.RUNNERS)}`);
  const threads: Record<string, string> = env.RUNNER_THREADS ? { RUNNER_THREADS: env.RUNNER_THREADS } : {};
  return Array.from({ length: count }, (_, i) => ({ RUNNER_ID: `local-${i + 1}`, ...threads }));
}
