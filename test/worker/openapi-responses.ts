// Holds every response the worker tests receive from a documented route against the OpenAPI
// document: its status must be listed for the operation and a JSON body must validate against
// the listed schema. `call` (helpers.ts) runs it on each response, so every test checks the
// document as a side effect. @cfworker/json-schema validates without code generation, which
// workerd forbids.
import { Validator } from "@cfworker/json-schema";
import { apiDescription } from "../../worker/app.ts";

interface Operation {
  responses: Record<string, { content?: Record<string, { schema: object }> }>;
}

const document = apiDescription.document() as unknown as { paths: Record<string, Record<string, Operation>>; components: object };
const escapeRegExp = (text: string) => text.replace(/[.*+?^$()|[\]\\]/g, "\\$&");

const operations = Object.entries(document.paths).flatMap(([path, item]) =>
  Object.entries(item).map(([method, operation]) => ({
    method: method.toUpperCase(),
    path,
    pattern: new RegExp(
      `^/api/v1${path
        .split(/\{[^}]+\}/)
        .map(escapeRegExp)
        .join("[^/]+")}$`,
    ),
    operation,
  })),
);

function documentedOperation(method: string, pathname: string) {
  return operations.find((o) => o.method === method && o.pattern.test(pathname));
}

const validators = new Map<object, Validator>();
function validatorFor(schema: object): Validator {
  let validator = validators.get(schema);
  if (!validator) {
    // The schema's $refs point into the document's components, so it travels with them.
    validator = new Validator({ ...schema, components: document.components } as never, "2020-12", false);
    validators.set(schema, validator);
  }
  return validator;
}

/** Throws naming the difference if `response` is not what the document promises. */
export async function checkAgainstDocument(method: string, url: string, response: Response): Promise<void> {
  const found = documentedOperation(method, new URL(url).pathname);
  if (!found) return; // internal API, signed storage URLs, unknown routes
  const where = `${method} ${found.path} answered ${response.status}`;
  const listed = found.operation.responses[String(response.status)];
  if (!listed) throw new Error(`${where}, which the OpenAPI document does not list`);
  const type = (response.headers.get("Content-Type") ?? "").split(";")[0]!.trim(); // split gives at least one piece
  if (!listed.content) {
    if (response.body !== null && type !== "") throw new Error(`${where} with a ${type} body; the document lists none`);
    return;
  }
  const content = listed.content[type];
  if (!content) throw new Error(`${where} as ${type}; the document lists ${Object.keys(listed.content).join(", ")}`);
  if (type !== "application/json") return;
  const result = validatorFor(content.schema).validate(await response.clone().json());
  if (!result.valid) {
    const errors = result.errors.map((e) => `${e.instanceLocation}: ${e.error}`).join("; ");
    throw new Error(`${where} with a body the document's schema refuses: ${errors}`);
  }
}
