// Runs the project's own wrangler (node_modules) with the Node running this script.
import { spawn, spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";

// wrangler's package exports do not include its bin; find it next to its package.json.
const wranglerBin = join(dirname(createRequire(import.meta.url).resolve("wrangler/package.json")), "bin", "wrangler.js");

/**
 * Wrangler's network calls that only fail offline and change nothing here. WRANGLER_SEND_METRICS:
 * no telemetry. CLOUDFLARE_CF_FETCH_ENABLED=false: miniflare does not download the `Request.cf`
 * sample from workers.cloudflare.com/cf.json (offline it printed `getaddrinfo ENOTFOUND
 * workers.cloudflare.com`) and uses its built-in placeholder, which nothing in this worker reads.
 */
export const quietEnv = { WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" };

export interface Target {
  /** undefined = local state; otherwise a deployed environment. */
  env?: "staging" | "production";
  /** Local state directory (default: wrangler's .wrangler/state, the one `npm start` uses). */
  persistTo?: string;
}

function wrangler(args: string[], options: { capture?: boolean } = {}): string {
  const result = spawnSync(process.execPath, [wranglerBin, ...args], {
    encoding: "utf8",
    stdio: options.capture ? ["ignore", "pipe", "pipe"] : "inherit",
    env: { ...process.env, CI: "1", ...quietEnv },
  });
  if (result.status !== 0) {
    throw new Error(`wrangler ${args.slice(0, 3).join(" ")} failed (exit ${result.status}):\n${result.stderr ?? ""}${result.stdout ?? ""}`);
  }
  return result.stdout ?? "";
}

/** `stdout: "pipe"` hands wrangler's standard output to the caller (npm start filters it); stderr stays the terminal's. */
export function spawnWrangler(args: string[], env: NodeJS.ProcessEnv = {}, stdout: "inherit" | "pipe" = "inherit") {
  // Piped, wrangler would drop its colours; a terminal behind the pipe keeps them.
  const colour = stdout === "pipe" && process.stdout.isTTY ? { FORCE_COLOR: "1" } : {};
  return spawn(process.execPath, [wranglerBin, ...args], { stdio: ["inherit", stdout, "inherit"], env: { ...process.env, ...quietEnv, ...colour, ...env } });
}

function targetFlags(target: Target): string[] {
  if (target.env) return ["--remote", "--env", target.env];
  return target.persistTo ? ["--local", "--persist-to", target.persistTo] : ["--local"];
}

/** Runs SQL on the D1 database of the target and returns the rows of the last statement. */
export function d1(target: Target, sql: string): Record<string, unknown>[] {
  const args = ["d1", "execute", "DB", ...targetFlags(target), "--json", "--command", sql];
  let out: string;
  for (let attempt = 1; ; attempt++) {
    try {
      out = wrangler(args, { capture: true });
      break;
    } catch (error) {
      // A running `wrangler dev` holds the local SQLite file now and then; wait and try again.
      if (attempt >= 10 || !/SQLITE_BUSY|database is locked/.test((error as Error).message)) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200 * attempt);
    }
  }
  const parsed = JSON.parse(out.slice(out.indexOf("["))) as { results: Record<string, unknown>[] }[];
  return parsed.at(-1)?.results ?? [];
}

export function applyMigrations(target: Target): void {
  wrangler(["d1", "migrations", "apply", "DB", ...targetFlags(target)], { capture: true });
}

export function r2Put(target: Target, key: string, file: string): void {
  const bucket = target.env ? `cellseg-${target.env}` : "cellseg";
  wrangler(["r2", "object", "put", `${bucket}/${key}`, "--file", file, ...targetFlags(target)], { capture: true });
}
