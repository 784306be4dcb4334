// npm start: the whole service on this machine. Applies D1 migrations to the local state
// (.wrangler/), creates the `demo` organization and a key on first start, puts the committed base
// model into local R2, then runs `wrangler dev` and (once it exists) a GPU runner beside it.
// Ctrl-C stops everything.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createKeySql, createOrganizationSql } from "./admin-sql.ts";
import { applyMigrations, d1, r2Put, spawnWrangler } from "./wrangler.ts";
import { spawn, type ChildProcess } from "node:child_process";

const port = process.env.PORT ?? "8787";
const local = {};

/** Local secrets live in .dev.vars (git-ignored), made once with fresh random values. */
function devVars(): Record<string, string> {
  if (!existsSync(".dev.vars")) {
    const secret = () => randomBytes(32).toString("hex");
    writeFileSync(".dev.vars", `SIGNING_KEY=${secret()}\nRUNNER_TOKENS=${secret()}\n`, { mode: 0o600 });
  }
  return Object.fromEntries(
    readFileSync(".dev.vars", "utf8").split("\n").filter((l) => l.includes("=")).map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1).trim()]),
  );
}

async function seedDemoOrganization(): Promise<void> {
  const [{ n }] = d1(local, "SELECT count(*) AS n FROM organizations") as { n: number }[];
  if (n > 0) return;
  d1(local, createOrganizationSql(crypto.randomUUID(), "demo"));
  const { key, sql } = await createKeySql("demo");
  d1(local, sql);
  console.log("\nCreated organization 'demo'. Its API key (shown once, only its hash is stored):\n");
  console.log(`  ${key}\n`);
}

function seedBaseModel(): void {
  const dir = "gpu-runner/models/cpsam";
  if (!existsSync(`${dir}/cpsam.onnx`)) {
    console.log("No trained base model at gpu-runner/models/cpsam/ yet: predictions will wait for one.");
    return;
  }
  r2Put(local, "models/cpsam/1/model.onnx", `${dir}/cpsam.onnx`);
  r2Put(local, "models/cpsam/1/model.json", `${dir}/cpsam.json`);
}

const vars = devVars();
console.log("Applying D1 migrations to the local database...");
applyMigrations(local);
await seedDemoOrganization();
seedBaseModel();

const children: ChildProcess[] = [spawnWrangler(["dev", "--ip", "127.0.0.1", "--port", port, "--show-interactive-dev-session=false"])];
const runnerMain = "gpu-runner/runner/main.ts";
if (existsSync(runnerMain)) {
  children.push(
    spawn(process.execPath, [runnerMain], {
      stdio: "inherit",
      env: { ...process.env, WORKER_URL: `http://127.0.0.1:${port}`, RUNNER_TOKEN: vars.RUNNER_TOKENS.split(",")[0] },
    }),
  );
}
console.log(`\nAPI: http://127.0.0.1:${port}/api/v1  (Ctrl-C stops everything)\n`);

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  for (const child of children) child.kill("SIGTERM");
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
for (const child of children) child.on("exit", (code) => {
  if (!stopping) console.error(`a child process exited (${code}); stopping`);
  stop();
  if (children.every((c) => c.exitCode !== null || c.signalCode !== null)) process.exit(code ?? 0);
});
