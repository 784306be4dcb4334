// Where the service is and the key to it: --api/--key, else CELLSEG_API/CELLSEG_KEY. The key is
// never printed; a key given as --key is visible to other users of the machine (ps), so the help
// recommends the environment variable.
import { Http, type HttpOptions } from "./http.ts";

const DEFAULT_API = "http://127.0.0.1:8787/api/v1";

export const CONNECTION_OPTIONS = {
  api: { type: "string" },
  key: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

export const CONNECTION_HELP = `Connection:
  --api URL    the service, e.g. https://cellseg.example.org/api/v1 (default: $CELLSEG_API, else ${DEFAULT_API})
  --key KEY    an API key of your organization (default: $CELLSEG_KEY; prefer the variable:
               a flag shows in the process list)`;

export class UsageError extends Error {}

/** The API base with its /api/v1 prefix, whether or not it was given with it. */
function apiBase(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--api ${JSON.stringify(url)} is not a URL`);
  }
  const path = parsed.pathname.replace(/\/+$/, "");
  return `${parsed.origin}${path === "" ? "/api/v1" : path}`;
}

export function connect(flags: { api?: string; key?: string }, extra: Omit<HttpOptions, "api" | "key"> = {}): Http {
  const key = flags.key ?? process.env.CELLSEG_KEY;
  if (!key) throw new UsageError("No API key: set CELLSEG_KEY (or pass --key); keys are created in the dashboard");
  return new Http({ api: apiBase(flags.api ?? process.env.CELLSEG_API ?? DEFAULT_API), key, ...extra });
}
