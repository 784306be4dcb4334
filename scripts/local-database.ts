// The local D1 database (the one `npm start` and `wrangler dev` use) as a drizzle database, for the
// worker's operator functions. wrangler's getPlatformProxy serves the real local D1 binding from
// the same state directory; nothing else may have that directory open meanwhile (a running stack:
// go through its operator API instead, scripts/running-stack.ts).
import { resolve } from "node:path";
import { drizzle } from "drizzle-orm/d1";
import { getPlatformProxy } from "wrangler";
import * as schema from "../schema/db.ts";
import type { OperatorDatabase } from "../worker/operator/database.ts";
import { quietEnv, type Target } from "./wrangler.ts";

/** wrangler's default local state directory; `--persist-to <dir>` replaces it. */
const DEFAULT_STATE = ".wrangler/state";

/** Runs `work` on the target's local database, then closes it (the proxy is a workerd process). */
export async function withLocalDatabase<T>(target: Target, work: (db: OperatorDatabase) => Promise<T>): Promise<T> {
  if (target.env) throw new Error(`withLocalDatabase is for local state, not --env ${target.env}`);
  // The same offline quietness the wrangler commands get (scripts/wrangler.ts): the proxy starts miniflare in this process.
  Object.assign(process.env, quietEnv);
  // wrangler dev and `wrangler d1 ... --local` keep their state in <dir>/v3; getPlatformProxy takes that v3 path itself.
  const persist = { path: resolve(target.persistTo ?? DEFAULT_STATE, "v3") };
  const proxy = await getPlatformProxy<{ DB: Parameters<typeof drizzle>[0] }>({ persist, remoteBindings: false });
  try {
    return await work(drizzle(proxy.env.DB, { schema }));
  } finally {
    await proxy.dispose();
  }
}
