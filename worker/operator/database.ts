// The database the operator functions run on: any async SQLite drizzle instance with the schema.
// The worker passes its drizzle(D1); the admin CLI passes drizzle over a local D1 binding
// (wrangler's getPlatformProxy) or over the D1 REST API (drizzle's sqlite-proxy) for deployed ones.
import type { BaseSQLiteDatabase } from "drizzle-orm/sqlite-core";
import type * as schema from "../../schema/db.ts";

/** The run result differs per driver (D1Result, sqlite-proxy's rows) and nothing here reads it. */
export type OperatorDatabase = BaseSQLiteDatabase<"async", unknown, typeof schema>;
