// The generated OpenAPI document is a valid OpenAPI 3.1 description whose references all resolve.
// Runs in Node: the validator compiles JSON Schema to code, which workerd does not allow.
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { apiDescription } from "../../worker/app.ts";

describe("GET /api/v1/openapi.json", () => {
  it("validates as OpenAPI 3.1 and every $ref resolves", async () => {
    const validator = new Validator();
    const document = JSON.parse(JSON.stringify(apiDescription.document()));
    const result = await validator.validate(document);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
    expect(JSON.stringify(validator.resolveRefs())).not.toContain('"$ref"');
  });

  it("(the validator refuses a document that breaks the rules, so the check above means something)", async () => {
    const document = JSON.parse(JSON.stringify(apiDescription.document()));
    delete document.paths["/models"].get.responses["200"].description;
    expect((await new Validator().validate(document)).valid).toBe(false);
  });
});
