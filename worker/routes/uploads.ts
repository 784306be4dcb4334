import { Hono } from "hono";
import { imageListQuery, pathId, resumableUploadBody } from "../../schema/api.ts";
import type { AppContext, AppEnv } from "../env.ts";
import { HttpError, notFound } from "../errors.ts";
import { deleteImage, getImage, imageView, listImages } from "../services/images.ts";
import { abortUpload, completeResumableUpload, partUrls, startResumableUpload, streamUpload } from "../services/uploads.ts";
import { jsonBody, parseOrReject, validate } from "../validation.ts";

export const uploads = new Hono<AppEnv>();

const origin = (url: string) => new URL(url).origin;

uploads.post("/upload", async (c) => {
  const type = c.req.header("Content-Type") ?? "";
  if (type.startsWith("multipart/form-data")) {
    return c.json({ image: imageView(await streamUpload(c.env, c.get("org"), c.req.raw)) }, 201);
  }
  if (!type.startsWith("application/json")) {
    throw new HttpError(415, "Send multipart/form-data with a 'file' part, or JSON {name, size} for a resumable upload");
  }
  const { name, size } = parseOrReject(resumableUploadBody, await jsonBody(c.req.raw), "body");
  const { image, upload } = await startResumableUpload(c.env, c.get("org"), origin(c.req.url), name, size);
  return c.json({ image: imageView(image), upload }, 201);
});

const ownImage = async (c: AppContext, resource: "Upload" | "Image") => {
  const id = c.req.param("id") ?? "";
  const image = await getImage(c.env.DB, c.get("org").id, id);
  if (!image) throw notFound(resource, id);
  return image;
};

uploads.get("/upload/:id", validate("param", pathId), async (c) => {
  const image = await ownImage(c, "Upload");
  // A pending upload gets fresh part URLs, so a client can resume after its old ones expired.
  const upload = image.status === "pending" && image.uploadId
    ? { part_size: image.partSize, part_count: image.partCount, urls: await partUrls(c.env, origin(c.req.url), image) }
    : null;
  return c.json({ ...imageView(image), upload });
});

uploads.post("/upload/:id/complete", validate("param", pathId), async (c) => {
  const image = await completeResumableUpload(c.env, await ownImage(c, "Upload"));
  return c.json({ id: image.id, status: "processing" }, 202);
});

uploads.post("/upload/:id/abort", validate("param", pathId), async (c) => {
  return c.json(imageView(await abortUpload(c.env, await ownImage(c, "Upload"))));
});

uploads.delete("/upload/:id", validate("param", pathId), async (c) => {
  await deleteImage(c.env, await ownImage(c, "Upload"));
  return c.body(null, 204);
});

uploads.get("/images", validate("query", imageListQuery), async (c) => {
  const { upload_status, limit, cursor } = c.req.valid("query");
  return c.json(await listImages(c.env.DB, c.get("org").id, upload_status, { limit, cursor }));
});

uploads.get("/image/:id", validate("param", pathId), async (c) => c.json(imageView(await ownImage(c, "Image"))));

uploads.delete("/image/:id", validate("param", pathId), async (c) => {
  await deleteImage(c.env, await ownImage(c, "Image"));
  return c.body(null, 204);
});
