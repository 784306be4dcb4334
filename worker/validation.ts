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

type Path = (string | number)[];

/**
 * The value at `path` inside what was validated. Zod 4 leaves `input` out of its issues, so
 * whether a field was missing or had the wrong type is read from the request itself.
 */
function lookUp(root: unknown, path: Path): { present: boolean; value?: unknown } {
  let value = root;
  for (const key of path) {
    if (value === null || typeof value !== "object" || !Object.hasOwn(value, key)) return { present: false };
    value = (value as Record<string | number, unknown>)[key];
  }
  return { present: true, value };
}

function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

/** What a union accepts, read off its branches' first issues: `number, "auto" or null`. */
function acceptedByUnion(issue: z.core.$ZodIssueInvalidUnion): string {
  const accepted = issue.errors.map(([first]) => {
    if (first?.code === "invalid_type") return first.expected;
    if (first?.code === "invalid_value") return first.values.map((v) => JSON.stringify(v)).join(" or ");
    return "another form";
  });
  return accepted.length > 1 ? `${accepted.slice(0, -1).join(", ")} or ${accepted.at(-1)}` : accepted.join("");
}

/** Pydantic's names, which the contract's 422 shape comes from: a number's bound, a string's or list's length. */
function boundType(origin: string, lengthType: string, numberType: string): string {
  if (origin === "number" || origin === "int" || origin === "bigint" || origin === "date") return numberType;
  return origin === "string" ? `string_${lengthType}` : lengthType;
}

function explain(issue: z.core.$ZodIssue, found: { present: boolean; value?: unknown }): { msg: string; type: string } {
  if (!found.present && (issue.code === "invalid_type" || issue.code === "invalid_union")) return { msg: "Field required", type: "missing" };
  switch (issue.code) {
    case "invalid_type":
      return { msg: `Input should be ${issue.expected}, not ${kindOf(found.value)}`, type: `${issue.expected}_type` };
    case "invalid_union":
      return { msg: `Input should be ${acceptedByUnion(issue)}, not ${kindOf(found.value)}`, type: "invalid_type" };
    case "too_small":
      return { msg: issue.message, type: boundType(issue.origin, "too_short", issue.inclusive ? "greater_than_equal" : "greater_than") };
    case "too_big":
      return { msg: issue.message, type: boundType(issue.origin, "too_long", issue.inclusive ? "less_than_equal" : "less_than") };
    default:
      return { msg: issue.message, type: issue.code };
  }
}

function toValidationIssues(error: z.core.$ZodError, location: string, validated: unknown): ValidationIssue[] {
  return error.issues.flatMap((issue): ValidationIssue[] => {
    const path = issue.path.map((p) => (typeof p === "symbol" ? String(p) : p));
    // One issue per field a body does not have, at the field, as pydantic's extra="forbid" answers it.
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => ({
        loc: [location, ...path, key],
        msg: issue.message,
        type: "extra_forbidden",
        input: lookUp(validated, [...path, key]).value,
      }));
    }
    const found = lookUp(validated, path);
    const out: ValidationIssue = { loc: [location, ...path], ...explain(issue, found) };
    if (found.present) out.input = found.value;
    if (issue.code === "too_small") out.ctx = { min: Number(issue.minimum) };
    if (issue.code === "too_big") out.ctx = { max: Number(issue.maximum) };
    return [out];
  });
}

export function validationFailure(error: z.core.$ZodError, target: string, validated: unknown): HttpError {
  return new HttpError(422, toValidationIssues(error, LOCATION[target] ?? target, validated));
}

/** Parses a value that did not come through a route validator, with the same 422 on failure. */
export function parseOrReject<Schema extends z.ZodType>(schema: Schema, value: unknown, location: string): z.infer<Schema> {
  const result = schema.safeParse(value);
  if (!result.success) throw new HttpError(422, toValidationIssues(result.error as z.core.$ZodError, location, value));
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
    if (!result.success) throw validationFailure(result.error as z.core.$ZodError, target, result.data);
  });
}
