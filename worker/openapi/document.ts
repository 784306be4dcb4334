// The OpenAPI 3.1 document of the public API, generated from the routes' own zod schemas, and the
// interactive reference page that reads it. Neither needs an API key.
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../env.ts";
import { referencePage } from "./reference-page.tsx";

const DOCUMENT_PATH = "/api/v1/openapi.json";

const description = `Cell segmentation of microscopy images: upload an image, run a prediction with a model and poll it
until it completes, then export the cells as measurements (CSV), outlines (GeoJSON, ImageJ ROIs) or a label mask.
Custom models are fine-tuned from a base model with a training job.

Every request carries \`Authorization: Bearer <API key>\`; every resource belongs to the key's organization, and another
organization's is answered exactly like a missing one (404). Handled errors are \`{detail: string}\`, validation errors
422 \`{detail: [{loc, msg, type, input?, ctx?}]}\`.`;

export function describeApi(publicApi: OpenAPIHono<AppEnv>) {
  publicApi.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
    description: "An organization's API key (created in the dashboard or with `npm run admin -- key create`)",
  });
  let built: ReturnType<typeof publicApi.getOpenAPI31Document> | undefined;
  /** Built once per isolate: the routes do not change while it runs. */
  const document = () => {
    built ??= publicApi.getOpenAPI31Document({
      openapi: "3.1.0",
      info: { title: "cellseg API", version: "1.0.0", description },
      servers: [{ url: "/api/v1", description: "This service" }],
      security: [{ bearer: [] }],
    });
    return built;
  };
  return { document, page: referencePage(document, DOCUMENT_PATH) };
}
