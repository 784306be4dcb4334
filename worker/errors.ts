// The one error helper: every handled error leaves the API as `{detail}` with its status.
import type { ErrorHandler, NotFoundHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";

export class HttpError extends Error {
  readonly status: ContentfulStatusCode;
  readonly detail: unknown;
  /** Headers the answer must carry besides the body, e.g. Retry-After on a 503, Content-Range on a 416. */
  readonly headers: Record<string, string>;
  constructor(status: ContentfulStatusCode, detail: unknown, headers: Record<string, string> = {}) {
    super(typeof detail === "string" ? detail : JSON.stringify(detail));
    this.status = status;
    this.detail = detail;
    this.headers = headers;
  }
}

type ResourceName = "Image" | "Model" | "Prediction" | "Job" | "Segmentation" | "Upload" | "Key" | "Organization" | "Session";

/** A foreign resource is answered exactly like a missing one. */
export function notFound(resource: ResourceName, id: string): HttpError {
  return new HttpError(404, `${resource} with id ${id} not found`);
}

export const onError: ErrorHandler = (err, c) => {
  if (err instanceof HttpError) return c.json({ detail: err.detail }, err.status, err.headers);
  if (err instanceof HTTPException) {
    // Hono's own validator rejects unparsable JSON bodies; the contract answers those as 422.
    if (err.message.startsWith("Malformed JSON")) {
      return c.json({ detail: [{ loc: ["body"], msg: "JSON decode error", type: "json_invalid" }] }, 422);
    }
    // Raised only by @hono/zod-openapi's media-type check in front of a JSON body.
    if (err.status === 415) return c.json({ detail: "Unsupported Media Type: send the body as application/json" }, 415);
    return c.json({ detail: err.message || "Bad request" }, err.status as ContentfulStatusCode);
  }
  // Never leak a stack trace or an internal message to the client; the log keeps it.
  console.error("unhandled error", c.req.method, new URL(c.req.url).pathname, err);
  return c.json({ detail: "Internal server error" }, 500);
};

export const onNotFound: NotFoundHandler = (c) => c.json({ detail: "Not Found" }, 404);
