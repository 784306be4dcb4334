// The operator commands' input checks. A refused input is a 422 with the reason, the one answer the
// worker gives bad input; the admin CLI prints the same reason.
import { PLANS, type Plan } from "../../schema/db.ts";
import { HttpError } from "../errors.ts";

const SLUG = /^[a-z0-9][a-z0-9-]{1,62}$/;
const EMAIL = /^[^\s@'"]+@[^\s@'"]+\.[^\s@'"]+$/;
const KEY_ID = /^[0-9a-f-]{36}$/;

function refuse(reason: string): never {
  throw new HttpError(422, reason);
}

export function checkSlug(slug: string): string {
  if (!SLUG.test(slug)) refuse(`organization slug must be 2-63 of a-z, 0-9 and '-', starting with a letter or digit: ${JSON.stringify(slug)}`);
  return slug;
}

/** The address lower-cased: members are matched by the email Cloudflare Access vouches for, in any case. */
export function checkEmail(email: string): string {
  if (!EMAIL.test(email)) refuse(`not an email address: ${JSON.stringify(email)}`);
  return email.toLowerCase();
}

export function checkPlan(plan: string): Plan {
  if (!(PLANS as readonly string[]).includes(plan)) refuse(`plan must be one of ${PLANS.join(", ")}`);
  return plan as Plan;
}

/** A storage or analysis cap: a whole number >= 0, or null/undefined for the plan's default. */
export function checkCap(cap: number | null | undefined): number | null {
  if (cap === undefined || cap === null) return null;
  if (!Number.isSafeInteger(cap) || cap < 0) refuse(`caps must be whole numbers >= 0, got ${cap}`);
  return cap;
}

export function checkKeyId(keyId: string): string {
  if (!KEY_ID.test(keyId)) refuse(`not a key id: ${JSON.stringify(keyId)}`);
  return keyId;
}
