// What an organization uses against its plan: the same counts the caps are enforced on.
import { count, eq } from "drizzle-orm";
import { images } from "../../schema/db.ts";
import type { Organization } from "../env.ts";
import { database } from "./database.ts";
import { analysesThisMonth } from "./jobs.ts";

export async function usage(d1: D1Database, org: Organization) {
  const [{ stored }] = await database(d1).select({ stored: count() }).from(images).where(eq(images.orgId, org.id));
  return {
    plan: org.plan,
    images: { used: stored, cap: org.storageCap },
    analyses_this_month: { used: await analysesThisMonth(d1, org.id), cap: org.analysisCap },
  };
}
