// npm start keeps its runners up: a runner that exits (a crash, an out-of-memory kill) is started
// again after a backoff and logged, and the stack stays up. Real runner processes, killed for real.
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { freePort, startRunner } from "../../scripts/local-stack.ts";
import { superviseRunner } from "../../scripts/runner-supervisor.ts";

const until = async (done: () => boolean, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  return done();
};

describe("npm start's runner supervisor", () => {
  it("starts a runner killed with SIGKILL again, logs it, and stops it for good when asked", async () => {
    // A runner with no worker to reach keeps asking for work: it stays up until it is killed.
    const workerUrl = `http://127.0.0.1:${await freePort()}`;
    const lines: string[] = [];
    const supervised = superviseRunner("runner local-1", () => startRunner({ WORKER_URL: workerUrl, RUNNER_TOKEN: "t", EXECUTION_PROVIDER: "cpu" }, "pipe"), {
      firstBackoffMs: 200,
      log: (line) => lines.push(line),
    });
    const first = supervised.current;
    expect(await until(() => first.pid !== undefined, 5000)).toBe(true);
    first.kill("SIGKILL");
    expect(await until(() => supervised.restarts === 1, 10_000)).toBe(true);
    expect(lines).toEqual(["[start] runner local-1 was killed (SIGKILL); starting it again in 0.2 s (its jobs are offered again when their leases run out)"]);
    const second = supervised.current;
    expect(second.pid).not.toBe(first.pid);
    expect(second.exitCode).toBeNull();
    await supervised.stop();
    expect(second.signalCode ?? second.exitCode).not.toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(supervised.restarts).toBe(1);
  }, 30_000);

  it("waits twice as long after each exit that came soon after its start, and starts over after a healthy run", async () => {
    const lines: string[] = [];
    let exitNow = true;
    const supervised = superviseRunner(
      "runner local-2",
      () => spawn(process.execPath, ["-e", exitNow ? "process.exit(3)" : "setTimeout(() => process.exit(4), 2500)"]),
      { firstBackoffMs: 50, maxBackoffMs: 150, healthyAfterMs: 2000, log: (line) => lines.push(line) },
    );
    expect(await until(() => supervised.restarts === 3, 10_000)).toBe(true);
    exitNow = false; // from the fourth start on it stays up past healthyAfterMs before it exits
    expect(await until(() => lines.length === 5, 10_000)).toBe(true);
    await supervised.stop();
    expect(lines.map((line) => line.match(/code (\d+); starting it again in ([\d.]+) s/)!.slice(1))).toEqual([
      ["3", "0.05"],
      ["3", "0.1"],
      ["3", "0.15"],
      ["3", "0.15"],
      ["4", "0.05"],
    ]);
  }, 30_000);
});
