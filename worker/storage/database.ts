import { drizzle } from "drizzle-orm/d1";
import * as schema from "../../schema/db.ts";

export function database(db: D1Database) {
  return drizzle(db, { schema });
}
