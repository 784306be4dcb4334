// Request validation with zod, answering 422 in the FastAPI shape the API contract copies:
// {detail: [{loc: ["body", "image_id"], msg, type, input?, ctx?}]}.
import { zValidator } from "@hono/zod-validator";
import type { ValidationTargets } from "hono";
import type { z } from "zod";
import { HttpError } from "./errors.ts";

const LOCATION: Record<string, string> = { json: "body", form: "body", query: "query", param: "path", header: "header" };

export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

function issueType(issue: z.core.$ZodIssue): string {
  if (issue.code === "invalid_type") return issue.input === undefined ? "missing" : `${issue.expected}_type`;
  if (issue.code === "too_small") return issue.origin === "string" ? "string_too_short" : "too_short";
  if (issue.code === "too_big") return issue.origin === "string" ? "string_too_long" : "too_long";
  return issue.code;
}

export function toValidationIssues(error: z.core.$ZodError, location: string): ValidationIssue[] {
  return error.issues.map((issue) => {
    const out: ValidationIssue = {
      loc: [location, ...issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))],
      msg: issue.input === undefined && issue.code === "invalid_type" ? "Field required" : issue.message,
      type: issueType(issue),
    };
    if (issue.input !== undefined) out.input = issue.input;
    if (issue.code === "too_small" || issue.code === "too_big") {
      out.ctx = { [issue.code === "too_small" ? "min" : "max"]: Number(issue.code === "too_small" ? issue.minimum : issue.maximum) };
    }
    return out;
  });
}

/** Parses a value that did not come through a route validator, with the same 422 on failure. */
export function parseOrReject<Schema extends z.ZodType>(schema: Schema, value: unknown, location: string): z.infer<Schema> {
  const result = schema.safeParse(value);
  if (!result.success) throw new HttpError(422, toValidationIssues(result.error as z.core.$ZodError, location));
  return result.data;
}

export async function jsonBody(request: Request): Promise<unknown> {
  try {
    return await request.json();
  } catch {
    throw new HttpError(422, [{ loc: ["body"], msg: "JSON decode error", type: "json_invalid" }]);
  }
}

export function validate<Target extends keyof ValidationTargets, Schema extends z.ZodType>(target: Target, schema: Schema) {
  return zValidator(target, schema, (result) => {
    if (!result.success) throw new HttpError(422, toValidationIssues(result.error as z.core.$ZodError, LOCATION[target] ?? target));
  });
}
