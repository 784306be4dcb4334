// The image storage cap. A record counts from its creation until its deletion (the contract's
// rule), and what counts is every image record and every imported segmentation: an import stores
// a file of the organization's as an upload does, and would otherwise be unbounded. Predicted
// segmentations are bounded by the monthly analysis cap instead. The cap is enforced inside the
// INSERT that creates the record (images.ts, segmentation-imports.ts), so concurrent requests
// never pass it; this module is the one definition of what they count.
import { and, count, eq, type SQL, sql } from "drizzle-orm";
import { images, segmentations } from "../../schema/db.ts";
import type { Organization } from "../env.ts";
import { HttpError } from "../errors.ts";
import { database } from "../storage/database.ts";

/** The SQL count the cap is checked against, for use inside a conditional INSERT. */
export function storedRecords(orgId: string): SQL {
  return sql`((SELECT count(*) FROM ${images} WHERE ${images.orgId} = ${orgId}) +
    (SELECT count(*) FROM ${segmentations} WHERE ${segmentations.orgId} = ${orgId} AND ${segmentations.source} = 'import'))`;
}

export async function storageUsage(d1: D1Database, orgId: string): Promise<{ images: number; imports: number }> {
  const db = database(d1);
  const [[stored], [imported]] = await Promise.all([
    db.select({ n: count() }).from(images).where(eq(images.orgId, orgId)),
    db
      .select({ n: count() })
      .from(segmentations)
      .where(and(eq(segmentations.orgId, orgId), eq(segmentations.source, "import"))),
  ]);
  // count() without GROUP BY answers exactly one row.
  return { images: stored!.n, imports: imported!.n };
}

export function storageCapReached(org: Organization): HttpError {
  return new HttpError(
    402,
    `Image storage limit reached: the ${org.plan} plan stores at most ${org.storageCap} images and imported segmentations together; delete some first`,
  );
}
