// What an organization uses against its plan: the same counts the caps are enforced on.
import type { Organization } from "../env.ts";
import { analysesThisMonth } from "./jobs.ts";
import { storageUsage } from "./storage-cap.ts";

export async function usage(d1: D1Database, org: Organization) {
  const stored = await storageUsage(d1, org.id);
  return {
    plan: org.plan,
    /** The storage cap counts images and imported segmentations together. */
    storage: { used: stored.images + stored.imports, cap: org.storageCap, images: stored.images, imported_segmentations: stored.imports },
    analyses_this_month: { used: await analysesThisMonth(d1, org.id), cap: org.analysisCap },
  };
}
