// How the admin CLI tells a running local stack from a stale announcement.
import { mkdtempSync, rmSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { announceStack, runningStack } from "../../scripts/running-stack.ts";

const dirs: string[] = [];
const stateDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "cellseg-state-"));
  dirs.push(dir);
  return { persistTo: dir };
};

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("the running-stack announcement", () => {
  it("names the stack while its process lives, and nothing once withdrawn", () => {
    const target = stateDir();
    expect(runningStack(target)).toBeNull();
    const stack = { url: "http://127.0.0.1:8787", pid: process.pid, secret: "s3cret" };
    const withdraw = announceStack(target, stack);
    expect(runningStack(target)).toEqual(stack);
    withdraw();
    expect(runningStack(target)).toBeNull();
  });

  it("is ignored once the process that made it has died (the CLI falls back to wrangler)", () => {
    const target = stateDir();
    const gone = spawnSync(process.execPath, ["-e", ""]).pid;
    announceStack(target, { url: "http://127.0.0.1:8787", pid: gone, secret: "s3cret" });
    expect(runningStack(target)).toBeNull();
  });
});
