// Keeps one local runner process running under `npm start`: a runner that exits while the stack is
// up (a crash, an out-of-memory kill) is started again after a backoff that doubles with each quick
// exit (1 s, 2 s, 4 s ... at most 30 s) and starts over once a runner has stayed up a minute. Its
// jobs are not lost meanwhile: their leases run out and the worker offers them again.
import type { ChildProcess } from "node:child_process";

interface SupervisorOptions {
  /** First wait before a restart, doubled after each exit that came soon after its start. */
  firstBackoffMs?: number;
  maxBackoffMs?: number;
  /** A runner that stayed up this long is taken as healthy: the next restart waits firstBackoffMs again. */
  healthyAfterMs?: number;
  log?: (line: string) => void;
}

interface SupervisedRunner {
  /** The runner process running now (a new one after each restart). */
  readonly current: ChildProcess;
  /** Restarts so far. */
  readonly restarts: number;
  /** Stops restarting, sends SIGTERM to the runner running now and resolves when it has exited. */
  stop(): Promise<void>;
}

const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise<void>((resolve) => child.once("exit", () => resolve()));

export function superviseRunner(name: string, start: () => ChildProcess, options: SupervisorOptions = {}): SupervisedRunner {
  const { firstBackoffMs = 1000, maxBackoffMs = 30_000, healthyAfterMs = 60_000, log = console.error } = options;
  let current = start();
  let startedAt = Date.now();
  let backoff = firstBackoffMs;
  let restarts = 0;
  let stopping = false;
  let pending: ReturnType<typeof setTimeout> | undefined;

  const watch = (child: ChildProcess) => {
    child.once("exit", (code, signal) => {
      if (stopping) return;
      if (Date.now() - startedAt >= healthyAfterMs) backoff = firstBackoffMs;
      const how = signal ? `was killed (${signal})` : `exited with code ${code}`;
      log(`[start] ${name} ${how}; starting it again in ${backoff / 1000} s (its jobs are offered again when their leases run out)`);
      pending = setTimeout(() => {
        pending = undefined;
        if (stopping) return;
        current = start();
        startedAt = Date.now();
        restarts++;
        watch(current);
      }, backoff);
      backoff = Math.min(maxBackoffMs, backoff * 2);
    });
  };
  watch(current);

  return {
    get current() {
      return current;
    },
    get restarts() {
      return restarts;
    },
    async stop() {
      stopping = true;
      if (pending) clearTimeout(pending);
      current.kill("SIGTERM");
      await exited(current);
    },
  };
}
