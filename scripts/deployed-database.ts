// A deployed environment's D1 database (`npm run admin -- ... --env staging|production`) as a
// drizzle database, for the worker's operator functions: drizzle's sqlite-proxy driver over the
// Cloudflare D1 REST API's raw query endpoint, which takes {sql, params}, so values stay bound
// parameters. Needs CLOUDFLARE_API_TOKEN (D1 edit) and CLOUDFLARE_ACCOUNT_ID; the database id is
// the environment's own in wrangler.toml.
import { drizzle } from "drizzle-orm/sqlite-proxy";
import { unstable_readConfig } from "wrangler";
import * as schema from "../schema/db.ts";
import type { OperatorDatabase } from "../worker/operator/database.ts";
import { UsageError } from "./usage-error.ts";

const API = "https://api.cloudflare.com/client/v4";

/** The raw endpoint's answer: each statement's rows as arrays of values, the shape sqlite-proxy maps to columns. */
interface RawQueryAnswer {
  success: boolean;
  errors?: { code: number; message: string }[];
  result?: { results?: { columns: string[]; rows: unknown[][] } }[];
}

export function deployedDatabase(env: "staging" | "production"): OperatorDatabase {
  const token = process.env.CLOUDFLARE_API_TOKEN;
  const account = process.env.CLOUDFLARE_ACCOUNT_ID;
  if (!token || !account)
    throw new UsageError(`--env ${env} needs CLOUDFLARE_API_TOKEN (with D1 edit permission) and CLOUDFLARE_ACCOUNT_ID in the environment`);
  const bindings: { binding: string; database_id?: string }[] = unstable_readConfig({ env }).d1_databases;
  const databaseId = bindings.find((d1) => d1.binding === "DB")?.database_id;
  if (!databaseId || databaseId.startsWith("REPLACE_WITH")) throw new UsageError(`wrangler.toml has no database_id for the DB binding of [env.${env}]`);
  return d1RestDatabase(`${API}/accounts/${account}/d1/database/${databaseId}/raw`, token, `the ${env} database`);
}

// Exported for its test only (test/scripts/deployed-database.test.ts).
/** A drizzle database whose every statement is one POST of {sql, params} to a D1 raw query endpoint. */
export function d1RestDatabase(endpoint: string, token: string, name: string): OperatorDatabase {
  return drizzle(
    async (sql, params, method) => {
      const response = await fetch(endpoint, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
        body: JSON.stringify({ sql, params }),
        signal: AbortSignal.timeout(30_000),
      });
      const answer = (await response.json()) as RawQueryAnswer;
      if (!response.ok || !answer.success) {
        const reasons = (answer.errors ?? []).map((error) => `${error.code}: ${error.message}`).join("; ");
        throw new Error(`the D1 REST API answered ${response.status} for ${name}: ${reasons || "no reason given"}`);
      }
      const rows = answer.result?.[0]?.results?.rows ?? [];
      // sqlite-proxy wants the one row itself for "get", and every row otherwise.
      return { rows: method === "get" ? (rows[0] as unknown[]) : rows };
    },
    { schema },
  );
}
