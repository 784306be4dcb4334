// `models`: the models the organization can segment with: the shared base models and its own.
import { parseArgs } from "node:util";
import type { ModelRecord } from "../../schema/api-records.ts";
import { CONNECTION_HELP, CONNECTION_OPTIONS, connect } from "../connection.ts";
import { table } from "../format.ts";

export const MODELS_HELP = `npm run client -- models [--json]

Lists the models your organization can use: shared base models (public) and your own.
  --json       print the records as JSON

${CONNECTION_HELP}`;

export async function modelsCommand(args: string[], out: NodeJS.WritableStream): Promise<number> {
  const { values } = parseArgs({ args, options: { ...CONNECTION_OPTIONS, json: { type: "boolean" } } });
  if (values.help) {
    out.write(`${MODELS_HELP}\n`);
    return 0;
  }
  const models = await connect(values).json<ModelRecord[]>("GET", "/models");
  if (values.json) {
    out.write(`${JSON.stringify(models, null, 2)}\n`);
    return 0;
  }
  const rows = models.map((m) => [m.id, m.name, m.is_public ? "public" : "own", m.version, m.created_at.slice(0, 10), m.description]);
  out.write(`${table(["id", "name", "kind", "version", "created", "description"], rows)}\n`);
  return 0;
}
