// Public routes are declared with @hono/zod-openapi: the zod schema of each parameter set, body and
// response is the one that validates the request (or types the answer) and the one the OpenAPI
// document is generated from, so the two cannot drift. Validation failures take the one 422 path
// (validation.ts).
import { OpenAPIHono } from "@hono/zod-openapi";
import type { z } from "zod";
import { errorBody, validationErrorBody } from "../../schema/api-records.ts";
import type { AppEnv } from "../env.ts";
import { validationFailure } from "../validation.ts";

export function apiRouter() {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) throw validationFailure(result.error as z.core.$ZodError, result.target, (result as { data?: unknown }).data);
    },
  });
}

export function jsonResponse<Schema extends z.ZodType>(schema: Schema, description: string) {
  return { description, content: { "application/json": { schema } } } as const;
}

const ERRORS = {
  400: "The request cannot be carried out as asked (the detail says why)",
  401: "Missing or invalid API key: `Requires authentication`",
  402: "A plan limit is reached (image storage or monthly analyses); upgrading the plan raises it",
  403: "A runner token: it reaches only the runners' internal API",
  404: "`<Resource> with id <id> not found`: it does not exist or belongs to another organization",
  409: "The resource is not in a state that allows this (the detail says which)",
  413: "The declared file size is above the upload limit",
  415: "The body's media type is not one the operation takes (see its request body)",
  429: "The organization has the most jobs of this kind queued or running at once; ask again after `Retry-After` seconds",
} as const;

type HandledStatus = keyof typeof ERRORS;
/** 422 is mostly a validation failure (a list); an upload or export that cannot be processed says why in a string. */
const unprocessable = validationErrorBody.or(errorBody);

type ErrorResponses<S extends HandledStatus> = { [K in S]: ReturnType<typeof jsonResponse<typeof errorBody>> } & {
  422: ReturnType<typeof jsonResponse<typeof unprocessable>>;
};

/** The error responses of a route: 401, 403 and 422 (every route has them) plus `statuses`. */
export function errorResponses<S extends HandledStatus>(...statuses: S[]): ErrorResponses<S | 401 | 403> {
  const out: Record<number, unknown> = { 401: jsonResponse(errorBody, ERRORS[401]), 403: jsonResponse(errorBody, ERRORS[403]) };
  for (const status of statuses) out[status] = jsonResponse(errorBody, ERRORS[status]);
  out[422] = jsonResponse(unprocessable, "The request failed validation (`detail` lists each problem), or its content cannot be processed (`detail` says why)");
  return out as ErrorResponses<S | 401 | 403>;
}
