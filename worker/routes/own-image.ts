// The image a route names, looked up in the caller's organization: shared by the upload routes and
// the image routes, which answer a missing or foreign id alike, each in its own word.
import type { AppContext } from "../env.ts";
import { notFound } from "../errors.ts";
import { getImage } from "../services/images.ts";

/** The organization's image `id`, else 404 naming it as an upload or an image. */
export async function ownImage(c: AppContext, resource: "Upload" | "Image", id: string) {
  const image = await getImage(c.env.DB, c.get("org").id, id);
  if (!image) throw notFound(resource, id);
  return image;
}

/** The 204 of both deletions: DELETE /upload/{image_id} and DELETE /image/{image_id} remove the same things. */
export const imageDeleted = { description: "Deleted: bytes, segmentations and record; the storage slot is free" };
