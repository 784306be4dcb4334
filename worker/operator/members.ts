// Dashboard members as operators manage them (`npm run admin -- member ...`): people Cloudflare
// Access signs in by email, each let into the organizations they are members of.
import { and, asc, eq } from "drizzle-orm";
import { organizationMembers, organizations } from "../../schema/db.ts";
import { HttpError } from "../errors.ts";
import { newId } from "../services/crypto.ts";
import type { OperatorDatabase } from "./database.ts";
import { checkEmail, checkSlug } from "./inputs.ts";
import { organizationIdBySlug, requireOrganizationId } from "./organizations.ts";

export interface MemberListing {
  email: string;
  created_at: number;
}

/** Adds a member; adding one twice is harmless. */
export async function addMember(db: OperatorDatabase, slug: string, email: string): Promise<void> {
  const address = checkEmail(email);
  const orgId = await requireOrganizationId(db, slug);
  await db.insert(organizationMembers).values({ id: newId(), orgId, email: address, createdAt: Date.now() }).onConflictDoNothing();
}

export async function listMembers(db: OperatorDatabase, slug: string): Promise<MemberListing[]> {
  return db
    .select({ email: organizationMembers.email, created_at: organizationMembers.createdAt })
    .from(organizationMembers)
    .innerJoin(organizations, eq(organizations.id, organizationMembers.orgId))
    .where(eq(organizations.slug, checkSlug(slug)))
    .orderBy(asc(organizationMembers.email));
}

/** Removes a member (their sessions end with their next request); one who is not a member is a 404. */
export async function removeMember(db: OperatorDatabase, slug: string, email: string): Promise<void> {
  // Not checkEmail: an address stored before a stricter check must still be removable.
  const address = email.toLowerCase();
  const orgId = await organizationIdBySlug(db, slug);
  const removed =
    orgId === undefined
      ? []
      : await db
          .delete(organizationMembers)
          .where(and(eq(organizationMembers.orgId, orgId), eq(organizationMembers.email, address)))
          .returning({ email: organizationMembers.email });
  if (removed.length === 0) throw new HttpError(404, `${email} is not a member of ${slug}`);
}
