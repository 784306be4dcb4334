// Creating organizations (`npm run admin -- org create`), and finding one by slug for the other
// operator commands.
import { eq } from "drizzle-orm";
import { organizations, type Plan } from "../../schema/db.ts";
import { HttpError } from "../errors.ts";
import { newId } from "../services/crypto.ts";
import type { OperatorDatabase } from "./database.ts";
import { checkCap, checkPlan, checkSlug } from "./inputs.ts";

export interface OrgOptions {
  plan?: Plan;
  storageCap?: number | null;
  analysisCap?: number | null;
}

export async function createOrganization(db: OperatorDatabase, slug: string, options: OrgOptions = {}): Promise<{ id: string; slug: string }> {
  const values = {
    id: newId(),
    slug: checkSlug(slug),
    plan: checkPlan(options.plan ?? "free"),
    storageCap: checkCap(options.storageCap),
    analysisCap: checkCap(options.analysisCap),
    createdAt: Date.now(),
  };
  // A slug that exists already inserts nothing and returns no row (no error to tell apart from others).
  const [created] = await db.insert(organizations).values(values).onConflictDoNothing({ target: organizations.slug }).returning({ id: organizations.id });
  if (!created) throw new HttpError(409, `Organization ${slug} already exists`);
  return { id: created.id, slug };
}

/** The organization's id, or undefined when no organization has this slug. */
export async function organizationIdBySlug(db: OperatorDatabase, slug: string): Promise<string | undefined> {
  const [found] = await db
    .select({ id: organizations.id })
    .from(organizations)
    .where(eq(organizations.slug, checkSlug(slug)))
    .limit(1);
  return found?.id;
}

/** The organization's id; a slug no organization has is a 404. */
export async function requireOrganizationId(db: OperatorDatabase, slug: string): Promise<string> {
  const id = await organizationIdBySlug(db, slug);
  if (id === undefined) throw new HttpError(404, `No organization with slug ${slug}`);
  return id;
}

/** Whether any organization exists (a fresh local state gets its first one from `npm start`). */
export async function anyOrganizationExists(db: OperatorDatabase): Promise<boolean> {
  return (await db.select({ id: organizations.id }).from(organizations).limit(1)).length > 0;
}
