// Image records (/images, /image/{image_id}): the organization's images, one image, deleting one.
// Uploading them is uploads.ts's.
import { createRoute } from "@hono/zod-openapi";
import { imageListQuery, imagePath } from "../../schema/api.ts";
import { imagePage, imageRecord } from "../../schema/api-records.ts";
import { apiRouter, errorResponses, jsonResponse } from "../openapi/router.ts";
import { deleteImage, imageView, listImages } from "../services/images.ts";
import { imageDeleted, ownImage } from "./own-image.ts";

export const imageRoutes = apiRouter();

const tags = ["Images"];

const listRoute = createRoute({
  method: "get",
  path: "/images",
  operationId: "listImages",
  tags,
  summary: "The organization's images",
  description: "Newest first, a page at a time; pass `next_cursor` as `cursor` for the next page.",
  request: { query: imageListQuery },
  responses: { 200: jsonResponse(imagePage, "A page of image records"), ...errorResponses() },
});

imageRoutes.openapi(listRoute, async (c) => {
  const { upload_status, sha256, limit, cursor } = c.req.valid("query");
  return c.json(await listImages(c.env.DB, c.get("org").id, { status: upload_status, sha256 }, { limit, cursor }), 200);
});

const getImageRoute = createRoute({
  method: "get",
  path: "/image/{image_id}",
  operationId: "getImage",
  tags,
  summary: "An image record",
  request: { params: imagePath },
  responses: { 200: jsonResponse(imageRecord, "The image record"), ...errorResponses(404) },
});

imageRoutes.openapi(getImageRoute, async (c) => c.json(imageView(await ownImage(c, "Image", c.req.valid("param").image_id)), 200));

const deleteImageRoute = createRoute({
  method: "delete",
  path: "/image/{image_id}",
  operationId: "deleteImage",
  tags,
  summary: "Delete an image",
  description: "Removes the image, its segmentations and the record, freeing the storage slot.",
  request: { params: imagePath },
  responses: { 204: imageDeleted, ...errorResponses(404, 409) },
});

imageRoutes.openapi(deleteImageRoute, async (c) => {
  await deleteImage(c.env, await ownImage(c, "Image", c.req.valid("param").image_id));
  return c.body(null, 204);
});
