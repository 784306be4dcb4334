// How the admin CLI finds a local stack that is running: whoever starts the worker on a local
// state directory (`npm start`, the end-to-end tests) leaves a file in it naming the worker's URL,
// the starting process and the operator secret, and removes it on the way out. While it is there,
// the admin CLI goes through the worker instead of opening the worker's SQLite file itself.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Target } from "./wrangler.ts";

export interface RunningStack {
  /** The worker's origin, e.g. http://127.0.0.1:8787 */
  url: string;
  /** The process that owns the stack; a file whose process is gone is stale. */
  pid: number;
  /** The worker's OPERATOR_SECRET. */
  secret: string;
}

/** wrangler's own default local state directory, the one `npm start` uses. */
const DEFAULT_STATE = join(".wrangler", "state");

function stackFile(target: Target): string {
  return join(target.persistTo ?? DEFAULT_STATE, "cellseg-running-stack.json");
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Announces a running stack; the returned function withdraws the announcement. */
export function announceStack(target: Target, stack: RunningStack): () => void {
  const file = stackFile(target);
  mkdirSync(join(file, ".."), { recursive: true });
  writeFileSync(file, JSON.stringify(stack), { mode: 0o600 });
  return () => rmSync(file, { force: true });
}

/** The stack running on this local state, or null when none is (or its owner died). */
export function runningStack(target: Target): RunningStack | null {
  const file = stackFile(target);
  if (!existsSync(file)) return null;
  try {
    const stack = JSON.parse(readFileSync(file, "utf8")) as RunningStack;
    return alive(stack.pid) ? stack : null;
  } catch {
    return null;
  }
}
