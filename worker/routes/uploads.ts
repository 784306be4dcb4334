// Uploads (/upload): the one-call and resumable forms, the part plan, completion, abandoning and
// deleting an upload. The image records they make are served by images.ts.
import { createRoute } from "@hono/zod-openapi";
import { imagePath, resumableUploadBody } from "../../schema/api.ts";
import { imageRecord, uploadedImage, uploadPlan, uploadProcessing, uploadState } from "../../schema/api-records.ts";
import { HttpError } from "../errors.ts";
import { apiRouter, errorResponses, jsonResponse } from "../openapi/router.ts";
import { deleteImage, imageView } from "../services/images.ts";
import { imageDeleted, ownImage } from "./own-image.ts";
import { abortUpload, completeResumableUpload, partUrls, startResumableUpload, streamUpload } from "../services/uploads.ts";
import { jsonBody, parseOrReject } from "../validation.ts";

export const uploadRoutes = apiRouter();

const origin = (url: string) => new URL(url).origin;
const tags = ["Images"];

// The JSON form's schema is a named component that the route points at, not a zod schema on the
// route: a zod body there would make the validator buffer a multipart body to parse it, and a file
// may be gigabytes. The handler validates the JSON form with the same schema.
uploadRoutes.openAPIRegistry.register("ResumableUploadRequest", resumableUploadBody);

const upload = createRoute({
  method: "post",
  path: "/upload",
  operationId: "uploadImage",
  tags,
  summary: "Upload an image",
  description:
    "Two forms. One call: `multipart/form-data` with a part named `file`, streamed into storage; the answer is the ready image. " +
    "Resumable: JSON `{name, size}`; the answer is the image record and a part plan: PUT each `part_size` chunk, in order, " +
    "to its URL (no Authorization header; repeat a PUT to retry a part), then `POST /upload/{image_id}/complete`.",
  request: {
    body: {
      required: true,
      content: {
        "multipart/form-data": {
          schema: {
            type: "object",
            required: ["file"],
            properties: { file: { type: "string", format: "binary", description: "The image file (TIFF, PNG or JPEG)" } },
          },
        },
        "application/json": { schema: { $ref: "#/components/schemas/ResumableUploadRequest" } },
      },
    },
  },
  responses: {
    201: {
      description: "The one-call form's ready image (`{image}`), or the resumable form's record and part plan (`{image, upload}`)",
      content: { "application/json": { schema: uploadedImage.or(uploadPlan) } },
    },
    ...errorResponses(400, 402, 413, 415),
  },
});

uploadRoutes.openapi(upload, async (c) => {
  const type = c.req.header("Content-Type") ?? "";
  if (type.startsWith("multipart/form-data")) {
    return c.json({ image: imageView(await streamUpload(c.env, c.get("org"), c.req.raw)) }, 201);
  }
  if (!type.startsWith("application/json")) {
    throw new HttpError(415, "Send multipart/form-data with a 'file' part, or JSON {name, size} for a resumable upload");
  }
  const { name, size, sha256 } = parseOrReject(resumableUploadBody, await jsonBody(c.req.raw), "body");
  const { image, upload } = await startResumableUpload(c.env, c.get("org"), origin(c.req.url), { name, size, sha256: sha256 ?? null });
  return c.json({ image: imageView(image), upload }, 201);
});

const getUpload = createRoute({
  method: "get",
  path: "/upload/{image_id}",
  operationId: "getUpload",
  tags,
  summary: "An upload's state",
  description:
    "The image record with `upload_status` and `upload_error`; a pending upload also gets fresh part URLs, so a client can resume after its old ones expired.",
  request: { params: imagePath },
  responses: { 200: jsonResponse(uploadState, "The image record and, while pending, its part plan"), ...errorResponses(404) },
});

uploadRoutes.openapi(getUpload, async (c) => {
  const image = await ownImage(c, "Upload", c.req.valid("param").image_id);
  const upload =
    image.status === "pending" && image.uploadId
      ? { part_size: image.partSize!, part_count: image.partCount!, urls: await partUrls(c.env, origin(c.req.url), image) }
      : null;
  return c.json({ ...imageView(image), upload }, 200);
});

const complete = createRoute({
  method: "post",
  path: "/upload/{image_id}/complete",
  operationId: "completeUpload",
  tags,
  summary: "Finish a resumable upload",
  description:
    "No body. Checks that every part arrived with the right size, completes the upload and starts the conversion, which ends `ready` or `failed` (with `upload_error`).",
  request: { params: imagePath },
  responses: { 202: jsonResponse(uploadProcessing, "Parts verified; the image is being converted"), ...errorResponses(400, 404, 409) },
});

uploadRoutes.openapi(complete, async (c) => {
  const image = await completeResumableUpload(c.env, await ownImage(c, "Upload", c.req.valid("param").image_id));
  return c.json({ id: image.id, status: "processing" as const }, 202);
});

const abort = createRoute({
  method: "post",
  path: "/upload/{image_id}/abort",
  operationId: "abortUpload",
  tags,
  summary: "Abandon a resumable upload",
  description: "Discards the uploaded parts and marks the record `failed`.",
  request: { params: imagePath },
  responses: { 200: jsonResponse(imageRecord, "The failed record"), ...errorResponses(404, 409) },
});

uploadRoutes.openapi(abort, async (c) => c.json(imageView(await abortUpload(c.env, await ownImage(c, "Upload", c.req.valid("param").image_id))), 200));

const deleteUpload = createRoute({
  method: "delete",
  path: "/upload/{image_id}",
  operationId: "deleteUpload",
  tags,
  summary: "Delete an upload",
  description: "Aborts anything in flight and removes the image, its segmentations and the record, freeing the storage slot.",
  request: { params: imagePath },
  responses: { 204: imageDeleted, ...errorResponses(404, 409) },
});

uploadRoutes.openapi(deleteUpload, async (c) => {
  await deleteImage(c.env, await ownImage(c, "Upload", c.req.valid("param").image_id));
  return c.body(null, 204);
});
