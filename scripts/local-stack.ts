// The local stack as `npm start` runs it, in pieces the end-to-end tests reuse: local state
// (migrations, an organization with a key, the base model in R2), `wrangler dev`, and runners.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Plan } from "../schema/db.ts";
import { createKey } from "../worker/operator/keys.ts";
import { anyOrganizationExists, createOrganization } from "../worker/operator/organizations.ts";
import { type AdminBackend, operatorBackend } from "./admin-backends.ts";
import { withLocalDatabase } from "./local-database.ts";
import { uploadPublicModels } from "./public-models.ts";
import { announceStack } from "./running-stack.ts";
import { applyMigrations, d1, r2Put, spawnWrangler, type Target } from "./wrangler.ts";

/**
 * Applies migrations; creates `slug` with a key if the database has no organization yet. Runs
 * before the worker starts: it opens the local state itself (the worker's operator functions on
 * getPlatformProxy's D1), which no other process may have open meanwhile.
 */
export async function prepareLocalState(target: Target, slug = "demo", plan?: Plan): Promise<{ createdKey: string | null }> {
  applyMigrations(target);
  return withLocalDatabase(target, async (db) => {
    if (await anyOrganizationExists(db)) return { createdKey: null };
    await createOrganization(db, slug, { plan });
    return { createdKey: (await createKey(db, slug)).key };
  });
}

export function startWorker(
  target: Target,
  port: number,
  vars: Record<string, string> = {},
  inspectorPort?: number,
  stdout: "inherit" | "pipe" = "inherit",
): ChildProcess {
  const args = ["dev", "--ip", "127.0.0.1", "--port", String(port), "--show-interactive-dev-session=false"];
  if (target.persistTo) args.push("--persist-to", target.persistTo);
  if (inspectorPort !== undefined) args.push("--inspector-port", String(inspectorPort));
  for (const [name, value] of Object.entries(vars)) args.push("--var", `${name}:${value}`);
  return spawnWrangler(args, {}, stdout);
}

export function startRunner(env: Record<string, string>, stdio: "inherit" | "pipe" = "inherit"): ChildProcess {
  return spawn(process.execPath, ["gpu-runner/runner/main.ts"], { stdio, env: { ...process.env, ...env } });
}

export async function waitUntilServing(url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      await fetch(url, { signal: AbortSignal.timeout(1000) });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

export interface LocalStack {
  api: string;
  key: string;
  /** The organization the stack made (its key is `key`). */
  slug: string;
  /** A fresh one-time dashboard sign-in URL for `slug`. */
  loginLink(): Promise<string>;
  /** The admin CLI's commands on this stack, through its worker's operator API. */
  admin: AdminBackend;
  /** The Worker's SIGNING_KEY, for signing storage URLs the way the Worker does. */
  signingKey: string;
  /** The `wrangler dev` process; workerd runs below it. */
  workerPid: number;
  /** The local state directory (`npm run admin -- ... --persist-to <state>` acts on this stack). */
  state: string;
  /** A runner on this stack; `stdio: "pipe"` lets the caller read what it logs. */
  startRunner(extra?: Record<string, string>, stdio?: "inherit" | "pipe"): ChildProcess;
  /**
   * Kills workerd and wrangler outright (SIGKILL: no cleanup runs), waits `downMs`, then starts
   * the worker again on the same port and local state, as after a crash and a restart.
   * `whileDown` runs meanwhile: the moment to read the local D1 file, which nothing else holds then.
   */
  restartWorker(options?: { downMs?: number; whileDown?: () => void }): Promise<void>;
  /** A token the worker accepts from runners. */
  runnerToken: string;
  sql(query: string): Record<string, unknown>[];
  /** Puts a file into the stack's local R2 bucket. */
  r2Put(key: string, file: string): void;
  stop(): Promise<void>;
}

const stopped = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise<void>((resolve) => child.once("exit", () => resolve()));

interface StackOptions {
  /** Serve the Worker isolate's DevTools inspector on this port (benchmarks read its heap). */
  inspectorPort?: number;
  /** The lease the worker grants and runners ask for (default 30 s); fault tests use short ones. */
  leaseSeconds?: number;
  /** More of the worker's vars, e.g. WAKE_UP_RESEND_SECONDS. */
  workerVars?: Record<string, string>;
  /** The plan of the stack's organization (default free): its caps and training bounds. */
  plan?: Plan;
}

/** Every process below `pid` (wrangler runs workerd, which has helpers of its own). */
function descendants(pid: number): number[] {
  const table = execFileSync("ps", ["-eo", "pid=,ppid="], { encoding: "utf8" })
    .trim()
    .split("\n")
    .map((line) => line.trim().split(/\s+/).map(Number));
  const found: number[] = [];
  const visit = (parent: number) => {
    for (const [child, ppid] of table) {
      if (ppid === parent && child !== undefined) {
        found.push(child);
        visit(child);
      }
    }
  };
  visit(pid);
  return found;
}

/** A whole local stack in a temporary state directory on a free port (tests and benchmarks). */
export async function startStack(options: StackOptions = {}): Promise<LocalStack> {
  const state = mkdtempSync(join(tmpdir(), "cellseg-e2e-"));
  const target = { persistTo: state };
  const runnerToken = `e2e-runner-${crypto.randomUUID()}`;
  const { createdKey } = await prepareLocalState(target, "e2e", options.plan);
  if (!uploadPublicModels(target).includes("cpsam")) throw new Error("the base model gpu-runner/models/cpsam/cpsam.onnx is missing");
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const signingKey = crypto.randomUUID();
  const operatorSecret = crypto.randomUUID();
  const leaseSeconds = String(options.leaseSeconds ?? 30);
  const vars = { SIGNING_KEY: signingKey, RUNNER_TOKENS: runnerToken, OPERATOR_SECRET: operatorSecret, LEASE_SECONDS: leaseSeconds, ...options.workerVars };
  let worker = startWorker(target, port, vars, options.inspectorPort);
  const children: ChildProcess[] = [worker];
  await waitUntilServing(`${url}/api/v1/models`);
  announceStack(target, { url, pid: worker.pid!, secret: operatorSecret });
  const admin = operatorBackend({ url, secret: operatorSecret });
  return {
    api: `${url}/api/v1`,
    key: createdKey!,
    slug: "e2e",
    loginLink: () => admin.createLoginLink("e2e", url),
    admin,
    signingKey,
    get workerPid() {
      return worker.pid!;
    },
    state,
    runnerToken,
    async restartWorker({ downMs = 0, whileDown } = {}) {
      const dead = stopped(worker);
      for (const pid of [...descendants(worker.pid!).reverse(), worker.pid!]) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // gone already
        }
      }
      await dead;
      const downUntil = Date.now() + downMs;
      whileDown?.();
      await new Promise((resolve) => setTimeout(resolve, downUntil - Date.now()));
      worker = startWorker(target, port, vars, options.inspectorPort);
      children.push(worker);
      await waitUntilServing(`${url}/api/v1/models`);
      announceStack(target, { url, pid: worker.pid!, secret: operatorSecret });
    },
    startRunner(extra = {}, stdio = "inherit") {
      const runner = startRunner(
        {
          WORKER_URL: url,
          RUNNER_TOKEN: runnerToken,
          EXECUTION_PROVIDER: "cpu",
          LEASE_SECONDS: leaseSeconds,
          MODEL_CACHE_DIR: join(state, "model-cache"),
          SHUTDOWN_GRACE_SECONDS: "5",
          ...extra,
        },
        stdio,
      );
      children.push(runner);
      return runner;
    },
    sql: (query) => d1(target, query),
    r2Put: (key, file) => r2Put(target, key, file),
    async stop() {
      for (const child of children) child.kill("SIGTERM");
      await Promise.all(children.map(stopped));
      rmSync(state, { recursive: true, force: true });
    },
  };
}
