// The API reference at /api/v1/docs, rendered by the worker from the OpenAPI document itself: plain
// HTML and one inline stylesheet, no script and nothing from another origin, so it works offline
// and under a Content-Security-Policy that allows nothing else. (Scalar's page loaded its script
// from a public CDN and was blank without internet; the document at /api/v1/openapi.json remains
// what tools and client generators read.)
import type { Context } from "hono";
import type { Child } from "hono/jsx";
import type { SecureHeadersVariables } from "hono/secure-headers";

type Schema = {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  additionalProperties?: boolean | Schema;
  description?: string;
  format?: string;
};
type Media = Record<string, { schema?: Schema }>;
type Operation = {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: { name: string; in: string; required?: boolean; description?: string; schema?: Schema }[];
  requestBody?: { description?: string; required?: boolean; content?: Media };
  responses?: Record<string, { description?: string; content?: Media }>;
};
type OpenApiDocument = {
  info: { title: string; version: string; description?: string };
  paths?: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
};

const METHODS = ["get", "post", "put", "patch", "delete"];
const refName = (ref: string) => ref.slice(ref.lastIndexOf("/") + 1);
const anchor = (name: string) => `schema-${name}`;

/** Markdown's `code` spans as <code>; the descriptions use nothing else. */
function prose(text: string | undefined): Child {
  if (!text) return null;
  return text
    .split(/\n{2,}/)
    .map((paragraph) => (
      <p>{paragraph.split(/(`[^`]+`)/).map((part) => (part.startsWith("`") && part.endsWith("`") ? <code>{part.slice(1, -1)}</code> : part))}</p>
    ));
}

/** A schema as a TypeScript-like type, named component schemas linked rather than expanded. */
function TypeOf({ schema, indent = "" }: { schema: Schema | undefined; indent?: string }): Child {
  if (!schema) return "unknown";
  if (schema.$ref) return <a href={`#${anchor(refName(schema.$ref))}`}>{refName(schema.$ref)}</a>;
  const union = schema.anyOf ?? schema.oneOf;
  if (union)
    return join(
      union.map((s) => <TypeOf schema={s} indent={indent} />),
      " | ",
    );
  if (schema.allOf)
    return join(
      schema.allOf.map((s) => <TypeOf schema={s} indent={indent} />),
      " & ",
    );
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  const types = Array.isArray(schema.type) ? schema.type : [schema.type ?? "unknown"];
  return join(
    types.map((type) => {
      if (type === "array") return <>{<TypeOf schema={schema.items} indent={indent} />}[]</>;
      if (type !== "object") return type === "integer" || type === "number" ? "number" : schema.format === "binary" ? "file" : type;
      if (!schema.properties)
        return typeof schema.additionalProperties === "object" ? (
          <>
            {"{ [key]: "}
            {<TypeOf schema={schema.additionalProperties} />}
            {" }"}
          </>
        ) : (
          "object"
        );
      const inner = `${indent}  `;
      return (
        <>
          {"{\n"}
          {Object.entries(schema.properties).map(([name, property]) => (
            <>
              {inner}
              <b>{name}</b>
              {schema.required?.includes(name) ? ": " : "?: "}
              <TypeOf schema={property} indent={inner} />
              {property.description ? <span class="note">{`  // ${property.description.replace(/\s+/g, " ")}`}</span> : null}
              {"\n"}
            </>
          ))}
          {`${indent}}`}
        </>
      );
    }),
    " | ",
  );
}

function join(parts: Child[], separator: string): Child {
  return parts.flatMap((part, i) => (i === 0 ? [part] : [separator, part]));
}

function Bodies({ content }: { content: Media | undefined }): Child {
  if (!content) return null;
  return Object.entries(content).map(([type, { schema }]) => (
    <div>
      <span class="media">{type}</span>
      {schema ? (
        <pre>
          <TypeOf schema={schema} />
        </pre>
      ) : null}
    </div>
  ));
}

function OperationView({ method, path, op }: { method: string; path: string; op: Operation }): Child {
  return (
    <section class="op" id={op.operationId}>
      <h3>
        <span class={`method ${method}`}>{method.toUpperCase()}</span> <code>{path}</code> {op.summary}
      </h3>
      {prose(op.description)}
      {op.parameters?.length ? (
        <table>
          <tr>
            <th>parameter</th>
            <th>in</th>
            <th>type</th>
            <th>description</th>
          </tr>
          {op.parameters.map((p) => (
            <tr>
              <td>
                <code>{p.name}</code>
                {p.required ? " (required)" : ""}
              </td>
              <td>{p.in}</td>
              <td>
                <code>
                  <TypeOf schema={p.schema} />
                </code>
              </td>
              <td>{p.description ?? p.schema?.description}</td>
            </tr>
          ))}
        </table>
      ) : null}
      {op.requestBody ? (
        <>
          <h4>Request body{op.requestBody.required ? "" : " (optional)"}</h4>
          {prose(op.requestBody.description)}
          <Bodies content={op.requestBody.content} />
        </>
      ) : null}
      <h4>Responses</h4>
      {Object.entries(op.responses ?? {}).map(([status, response]) => (
        <details open={status.startsWith("2")}>
          <summary>
            <b>{status}</b> {response.description}
          </summary>
          <Bodies content={response.content} />
        </details>
      ))}
    </section>
  );
}

const STYLE = `
body { font: 15px/1.5 system-ui, sans-serif; margin: 0 auto; max-width: 1100px; padding: 1rem 2rem 4rem; color: #1d2430; }
h2 { margin-top: 2.5rem; border-bottom: 1px solid #d0d6e0; }
h3 { margin: 1.8rem 0 0.4rem; font-size: 1.05rem; overflow-wrap: anywhere; }
pre { background: #f4f6fa; padding: 0.6rem 0.8rem; overflow-x: auto; font-size: 13px; }
code { font-size: 0.92em; overflow-wrap: anywhere; }
table { border-collapse: collapse; margin: 0.5rem 0; }
td, th { border: 1px solid #d0d6e0; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
.method { display: inline-block; min-width: 4.2rem; padding: 0 0.4rem; border-radius: 3px; color: #fff; text-align: center; font-size: 0.85rem; }
.get { background: #2f7d32; } .post { background: #1e5fb4; } .put, .patch { background: #a86400; } .delete { background: #b3261e; }
.media { font-size: 0.85rem; color: #5a6474; }
.note { color: #6b7686; }
nav ul { columns: 2; }
`;

/** The whole page; `nonce` admits its one inline stylesheet under the page's CSP. */
function ReferencePage({ document, documentPath, nonce }: { document: OpenApiDocument; documentPath: string; nonce: string }): Child {
  const byTag = new Map<string, { method: string; path: string; op: Operation }[]>();
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const tag = op.tags?.[0] ?? "Other";
      byTag.set(tag, [...(byTag.get(tag) ?? []), { method, path, op }]);
    }
  }
  const title = `${document.info.title} reference`;
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{title}</title>
        <link rel="icon" href="/dashboard/assets/favicon.svg" type="image/svg+xml" />
        <style nonce={nonce}>{STYLE}</style>
      </head>
      <body>
        <h1>
          {document.info.title} <small>{document.info.version}</small>
        </h1>
        {prose(document.info.description)}
        <p>
          The machine-readable description: <a href={documentPath}>{documentPath}</a> (OpenAPI 3.1; generate a client from it).
        </p>
        <nav>
          <ul>
            {[...byTag].map(([tag, ops]) => (
              <li>
                {tag}:{" "}
                {join(
                  ops.map(({ method, path, op }) => (
                    <a href={`#${op.operationId}`}>
                      {method.toUpperCase()} {path}
                    </a>
                  )),
                  ", ",
                )}
              </li>
            ))}
          </ul>
        </nav>
        {[...byTag].map(([tag, ops]) => (
          <>
            <h2>{tag}</h2>
            {ops.map((entry) => (
              <OperationView {...entry} />
            ))}
          </>
        ))}
        <h2>Schemas</h2>
        {Object.entries(document.components?.schemas ?? {}).map(([name, schema]) => (
          <section id={anchor(name)}>
            <h3>
              <code>{name}</code>
            </h3>
            {prose(schema.description)}
            <pre>
              <TypeOf schema={schema} />
            </pre>
          </section>
        ))}
      </body>
    </html>
  );
}

/**
 * The handler for /api/v1/docs. Its Content-Security-Policy (middleware/security-headers.ts) lets
 * it load nothing but its own style, which carries the nonce that policy names.
 */
export function referencePage(document: () => unknown, documentPath: string) {
  return (c: Context<{ Variables: SecureHeadersVariables }>) => {
    const nonce = c.get("secureHeadersNonce");
    if (!nonce) throw new Error("the reference page is served without referenceSecurityHeaders, so its style has no nonce");
    const page = <ReferencePage document={document() as OpenApiDocument} documentPath={documentPath} nonce={nonce} />;
    return c.html(`<!doctype html>${page}`);
  };
}
