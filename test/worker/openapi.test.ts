// The API's description: served without a key, covering exactly the public routes the app
// serves, with the bearer scheme and the error bodies. (Its validity as OpenAPI 3.1 is checked in
// test/api; every response the worker tests receive is checked against it by `call`.)
import { describe, expect, it } from "vitest";
import { app } from "../../worker/app.ts";
import { MEASUREMENT_GROUPS } from "../../schema/measurements.ts";
import { call } from "./helpers.ts";
import { directivesOf } from "./content-security-policy.ts";

interface Operation {
  operationId: string;
  parameters?: { name: string; in: string; required?: boolean }[];
  requestBody?: { content: Record<string, unknown> };
  responses: Record<string, { content?: Record<string, { schema: Record<string, unknown> }> }>;
  security?: unknown;
}
interface Document {
  openapi: string;
  info: { version: string };
  servers: { url: string }[];
  security: Record<string, string[]>[];
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes: Record<string, unknown>; schemas: Record<string, { properties?: Record<string, unknown>; required?: string[] }> };
}

async function fetchDocument(): Promise<Document> {
  const response = await call("/openapi.json");
  expect(response.status).toBe(200);
  return (await response.json()) as Document;
}

/** "GET /api/v1/upload/{image_id}" for every operation of the document. */
function documented(document: Document): string[] {
  return Object.entries(document.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} /api/v1${path}`));
}

/** The same for every route the app serves to API-key holders (not runners, signed URLs, the docs or the service's root). */
function served(): string[] {
  const notPublic = /^\/dashboard(\/|$)|^\/api\/v1\/(internal|storage|operator)\/|^\/api\/v1\/(openapi\.json|docs)$|^\/docs$|^\/$/;
  const routes = app.routes.filter((r) => r.method !== "ALL" && !notPublic.test(r.path));
  return [...new Set(routes.map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, "{$1}")}`))];
}

describe("the OpenAPI document", () => {
  it("is served at /api/v1/openapi.json without an API key, as OpenAPI 3.1 of interface version 1.0.0", async () => {
    const document = await fetchDocument();
    expect(document.openapi).toBe("3.1.0");
    expect(document.info.version).toBe("1.0.0");
    expect(document.servers).toEqual([expect.objectContaining({ url: "/api/v1" })]);
  });

  it("describes every public route the app serves, and nothing else", async () => {
    const document = await fetchDocument();
    expect(documented(document).sort()).toEqual(served().sort());
    // Spot checks that the comparison covers what it should.
    expect(served()).toEqual(expect.arrayContaining(["POST /api/v1/upload", "GET /api/v1/images", "GET /api/v1/export/{segmentation_id}/rois.zip"]));
    expect(JSON.stringify(document)).not.toMatch(/\/internal|lease_token|\/storage|\/operator/);
  });

  it("asks for the bearer API key on every operation", async () => {
    const document = await fetchDocument();
    expect(document.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });
    expect(document.security).toEqual([{ bearer: [] }]);
    for (const item of Object.values(document.paths)) for (const operation of Object.values(item)) expect(operation.security).toBeUndefined();
  });

  it("gives every operation its 401, 403 and 422 with the error bodies, and path parameters named as the contract names them", async () => {
    const document = await fetchDocument();
    const error = { $ref: "#/components/schemas/Error" };
    for (const [path, item] of Object.entries(document.paths)) {
      for (const operation of Object.values(item)) {
        expect(operation.responses["401"]?.content?.["application/json"]?.schema).toEqual(error);
        expect(operation.responses["403"]?.content?.["application/json"]?.schema).toEqual(error);
        expect(operation.responses["422"]?.content?.["application/json"]?.schema).toEqual({ anyOf: [{ $ref: "#/components/schemas/ValidationError" }, error] });
        const inPath = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
        expect((operation.parameters ?? []).filter((p) => p.in === "path").map((p) => [p.name, p.required])).toEqual(inPath.map((name) => [name, true]));
        for (const name of inPath) expect(["image_id", "prediction_id", "job_id", "segmentation_id", "model_id"]).toContain(name);
      }
    }
    expect(document.components.schemas.Error).toMatchObject({ required: ["detail"] });
    expect(Object.keys(document.components.schemas.ValidationError?.properties ?? {})).toEqual(["detail"]);
  });

  it("names every operation uniquely (operationId), so generated clients get method names", async () => {
    const document = await fetchDocument();
    const ids = Object.values(document.paths).flatMap((item) => Object.values(item).map((operation) => operation.operationId));
    expect(ids.every((id) => /^[a-z][A-Za-z]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("describes the records with the contract's field names", async () => {
    const { components, paths } = await fetchDocument();
    const fields = (name: string) => Object.keys(components.schemas[name]?.properties ?? {});
    expect(fields("Image")).toEqual(expect.arrayContaining(["id", "name", "upload_status", "upload_error"]));
    expect(fields("UploadPlan")).toEqual(["image", "upload"]);
    expect(fields("UploadParts")).toEqual(expect.arrayContaining(["part_size", "urls"]));
    expect(fields("Model")).toEqual(expect.arrayContaining(["id", "name", "is_public", "created_at", "description"]));
    expect(fields("Prediction")).toEqual(expect.arrayContaining(["prediction_id", "status", "segmentation_id", "cell_count"]));
    expect(fields("JobAcknowledgement")).toEqual(["job_id", "status", "reason", "task_id", "worker_job_id"]);
    expect(Object.keys(paths["/upload"]?.post?.requestBody?.content ?? {}).sort()).toEqual(["application/json", "multipart/form-data"]);
    expect(paths["/export/{segmentation_id}/measurements.csv"]?.get?.parameters?.map((p) => p.name)).toContain("columns");
  });

  it("documents the measurement columns and their groups on both exports that take `columns`", async () => {
    const { paths } = await fetchDocument();
    for (const path of ["/export/{segmentation_id}/measurements.csv", "/export/{segmentation_id}/rois.geojson"]) {
      const columns = paths[path]?.get?.parameters?.find((p) => p.name === "columns") as { description?: string } | undefined;
      expect(columns, path).toBeDefined();
      for (const text of ["`default`", "`shape`", "`all`", "`bbox_h`", "`solidity`", "ImageJ", "regionprops"])
        expect(columns!.description, path).toContain(text);
    }
  });

  it("describes measurements.csv with every column group, each as the column list defines it", async () => {
    const { paths } = await fetchDocument();
    const description = (paths["/export/{segmentation_id}/measurements.csv"]?.get as { description?: string } | undefined)?.description;
    for (const [group, what] of Object.entries(MEASUREMENT_GROUPS)) expect(description).toContain(`\`${group}\`: ${what}`);
    expect(description).toContain("rounded to 6 significant digits");
  });
});

describe("the API reference page", () => {
  it("is served at /api/v1/docs without an API key and reads the document", async () => {
    const response = await call("/docs");
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toMatch(/^text\/html/);
    expect(await response.text()).toContain("/api/v1/openapi.json");
  });

  it("describes every operation and schema of the document in the page itself", async () => {
    const document = await fetchDocument();
    const html = await (await call("/docs")).text();
    for (const item of Object.values(document.paths)) {
      for (const op of Object.values(item)) expect(html).toContain(`id="${op.operationId}"`);
    }
    for (const name of Object.keys(document.components.schemas)) expect(html).toContain(`id="schema-${name}"`);
    expect(html).toContain("/upload/{image_id}/complete");
  });

  it("needs no script and nothing from another origin, and its policy allows nothing else", async () => {
    const response = await call("/docs");
    const html = await response.text();
    expect(html).not.toMatch(/<script|<link[^>]+stylesheet|https?:\/\/(?!127\.0\.0\.1)[^"<\s]*"/);
    const policy = directivesOf(response.headers.get("Content-Security-Policy"));
    expect(policy).toMatchObject({
      "default-src": ["'none'"],
      "script-src": ["'none'"],
      "style-src": [expect.stringMatching(/^'nonce-[A-Za-z0-9+/=]+'$/)],
      "img-src": ["'self'"],
      "form-action": ["'none'"],
      "base-uri": ["'none'"],
      "frame-ancestors": ["'none'"],
    });
    // The one inline stylesheet carries the nonce the policy names, a new one on every answer.
    const nonce = /^'nonce-(.+)'$/.exec(policy["style-src"]![0]!)![1]; // style-src is one nonce: checked just above
    expect(html).toContain(`<style nonce="${nonce}">`);
    expect(directivesOf((await call("/docs")).headers.get("Content-Security-Policy"))["style-src"]).not.toEqual(policy["style-src"]);
    expect(response.headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect(response.headers.get("Referrer-Policy")).toBe("same-origin");
  });

  it("/docs leads there", async () => {
    const response = await call("http://cellseg.test/docs", { redirect: "manual" });
    expect(response.status).toBe(302);
    expect(response.headers.get("Location")).toBe("/api/v1/docs");
  });
});
