// npm start: the whole service on this machine. Applies D1 migrations to the local state
// (.wrangler/), creates the `demo` organization and a key on first start, puts the committed base
// model into local R2, then runs `wrangler dev` and GPU runners beside it: RUNNERS of them (default
// 1), each with RUNNER_THREADS threads when set (local-runners.ts). A runner that exits is started
// again after a backoff (runner-supervisor.ts); the worker's exit, or Ctrl-C, stops everything.
import { randomBytes } from "node:crypto";
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { uploadPublicModels } from "./public-models.ts";
import { operatorBackend } from "./admin-backends.ts";
import { prepareLocalState, startRunner, startWorker, waitUntilServing } from "./local-stack.ts";
import { localRunners } from "./local-runners.ts";
import { superviseRunner } from "./runner-supervisor.ts";
import { readyBanner } from "./ready-banner.ts";
import { withoutRequestLines } from "./request-log.ts";
import { announceStack } from "./running-stack.ts";

const port = Number(process.env.PORT ?? 8787);
const local = {};
let runnerEnvs: Record<string, string>[];
try {
  runnerEnvs = localRunners(process.env);
} catch (error) {
  console.error(`error: ${(error as Error).message}`);
  process.exit(2);
}

const readDevVars = (): Record<string, string> =>
  Object.fromEntries(
    readFileSync(".dev.vars", "utf8")
      .split("\n")
      .filter((l) => l.includes("="))
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1).trim()]),
  );

/**
 * Local secrets live in .dev.vars (git-ignored), made once with fresh random values; a secret a
 * newer version needs (OPERATOR_SECRET, the admin CLI's key to the running worker) is added.
 */
function devVars(): Record<string, string> {
  const secret = () => randomBytes(32).toString("hex");
  if (!existsSync(".dev.vars")) writeFileSync(".dev.vars", `SIGNING_KEY=${secret()}\nRUNNER_TOKENS=${secret()}\n`, { mode: 0o600 });
  if (!readDevVars().OPERATOR_SECRET) appendFileSync(".dev.vars", `\nOPERATOR_SECRET=${secret()}\n`);
  return readDevVars();
}

const vars = devVars();
// devVars adds OPERATOR_SECRET when it is missing; RUNNER_TOKENS is written only into a new file.
const operatorSecret = vars.OPERATOR_SECRET;
const runnerToken = vars.RUNNER_TOKENS?.split(",")[0];
if (operatorSecret === undefined || runnerToken === undefined) {
  console.error("error: .dev.vars has no RUNNER_TOKENS (the runners' tokens, comma-separated): add it, or delete .dev.vars to have a fresh one made");
  process.exit(2);
}
console.log("Applying D1 migrations to the local database...");
const { createdKey } = await prepareLocalState(local);
// The key is printed in the closing block, where the startup messages below cannot scroll it away.
if (createdKey) console.log("Created organization 'demo' with an API key (printed below once everything is up).");
if (!uploadPublicModels(local).includes("cpsam"))
  console.log("No trained base model at gpu-runner/models/cpsam/ yet: predictions will fail until one is committed.");

const url = `http://127.0.0.1:${port}`;
// From here on (the last time this process opens the database file itself) `npm run admin` goes
// through the worker, waiting for it while it starts, instead of opening the file beside it.
const stack = { url, pid: process.pid, secret: operatorSecret };
const withdrawStack = announceStack(local, stack);
process.on("exit", withdrawStack);
// wrangler logs every request (the runner's long poll alone every 20 s): left out unless
// CELLSEG_LOG_REQUESTS=1; a request answered 5xx, warnings and errors stay (request-log.ts).
const logRequests = process.env.CELLSEG_LOG_REQUESTS === "1";
const worker = startWorker(local, port, {}, undefined, logRequests ? "inherit" : "pipe");
worker.stdout?.pipe(withoutRequestLines()).pipe(process.stdout);
// A path that needs no key, so the wait logs 200 OK rather than 401s that read as failures.
await waitUntilServing(`${url}/api/v1/openapi.json`);
const runners = runnerEnvs.map((env) =>
  superviseRunner(`runner ${env.RUNNER_ID}`, () => {
    const runner = startRunner({ WORKER_URL: url, RUNNER_TOKEN: runnerToken, ...env }, "pipe");
    runner.stdout?.pipe(process.stdout);
    runner.stderr?.pipe(process.stderr);
    return runner;
  }),
);
// The first runner's first line (its onnxruntime backends) comes before the closing block, not after it.
const first = runners[0]!.current;
await new Promise<void>((resolve) => {
  first.stderr?.once("data", () => setImmediate(resolve));
  first.once("exit", () => resolve());
  setTimeout(resolve, 10_000).unref();
});
// A one-time sign-in to the dashboard for `demo` (15 minutes), made through the running worker like
// every admin command.
const loginLink = await operatorBackend(stack).createLoginLink("demo", url);
console.log(readyBanner({ url, slug: "demo", loginLink, createdKey }));

let stopping = false;
const stop = async (code: number) => {
  if (stopping) return;
  stopping = true;
  const workerGone = worker.exitCode !== null || worker.signalCode !== null ? Promise.resolve() : new Promise((resolve) => worker.once("exit", resolve));
  worker.kill("SIGTERM");
  await Promise.all([workerGone, ...runners.map((runner) => runner.stop())]);
  process.exit(code);
};
process.on("SIGINT", () => void stop(0));
process.on("SIGTERM", () => void stop(0));
worker.on("exit", (code) => {
  if (!stopping) console.error(`the worker exited (${code}); stopping`);
  void stop(code ?? 0);
});
