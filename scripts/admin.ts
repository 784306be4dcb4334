// npm run admin -- org create <slug> [--plan free|pro|enterprise] [--storage-cap N] [--analysis-cap N]
//                  key create <org-slug> | key list <org-slug> | key revoke <key-id>
//                  base-model upload
//                  [--env staging|production]   (default: the local database of `npm start`)
import { parseArgs } from "node:util";
import type { Plan } from "../schema/db.ts";
import { AdminInputError, createKeySql, createOrganizationSql, listKeysSql, revokeKeySql } from "./admin-sql.ts";
import { uploadBaseModel } from "./base-model.ts";
import { applyMigrations, d1, type Target } from "./wrangler.ts";

const USAGE = `usage: npm run admin -- <command> [--env staging|production]
  org create <slug> [--plan free|pro|enterprise] [--storage-cap N] [--analysis-cap N]
  key create <org-slug>      prints the new key as the last line (shown once; only its hash is stored)
  key list <org-slug>
  key revoke <key-id>
  base-model upload          puts the committed gpu-runner/models/cpsam files where the cpsam row points`;

function intOption(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new AdminInputError(`--${name} must be a whole number >= 0`);
  return n;
}

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      env: { type: "string" },
      plan: { type: "string" },
      "storage-cap": { type: "string" },
      "analysis-cap": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [resource, action, arg] = positionals;
  if (values.help || !resource) {
    console.log(USAGE);
    return;
  }
  if (values.env !== undefined && values.env !== "staging" && values.env !== "production") throw new AdminInputError("--env must be staging or production");
  const target: Target = { env: values.env as Target["env"] };
  if (!target.env) applyMigrations(target);

  const need = (what: string) => {
    if (!arg) throw new AdminInputError(`missing ${what}\n${USAGE}`);
    return arg;
  };

  if (resource === "org" && action === "create") {
    const slug = need("<slug>");
    const id = crypto.randomUUID();
    d1(target, createOrganizationSql(id, slug, {
      plan: values.plan as Plan | undefined,
      storageCap: intOption(values["storage-cap"], "storage-cap"),
      analysisCap: intOption(values["analysis-cap"], "analysis-cap"),
    }));
    console.log(`created organization ${slug} (${id})`);
  } else if (resource === "key" && action === "create") {
    const slug = need("<org-slug>");
    const { id, key, sql } = await createKeySql(slug);
    d1(target, sql);
    if (d1(target, `SELECT id FROM api_keys WHERE id = '${id}'`).length === 0) throw new AdminInputError(`no organization with slug ${slug}`);
    console.log(`key ${id} for ${slug} (shown once, store it now):`);
    console.log(key);
  } else if (resource === "key" && action === "list") {
    const rows = d1(target, listKeysSql(need("<org-slug>")));
    for (const row of rows) {
      const state = row.revoked_at ? `revoked ${new Date(Number(row.revoked_at)).toISOString()}` : "active";
      console.log(`${row.id}  ${row.prefix}…  created ${new Date(Number(row.created_at)).toISOString()}  ${state}`);
    }
    if (rows.length === 0) console.log("no keys");
  } else if (resource === "key" && action === "revoke") {
    if (d1(target, revokeKeySql(need("<key-id>"))).length === 0) throw new AdminInputError(`no active key with id ${arg}`);
    console.log(`revoked key ${arg}`);
  } else if (resource === "base-model" && action === "upload") {
    if (!uploadBaseModel(target)) throw new AdminInputError("no base model at gpu-runner/models/cpsam/cpsam.onnx");
    console.log(`uploaded the base model to ${target.env ?? "the local"} R2 bucket`);
  } else {
    throw new AdminInputError(`unknown command: ${positionals.join(" ")}\n${USAGE}`);
  }
}

main(process.argv.slice(2)).catch((error) => {
  console.error(error instanceof AdminInputError ? `error: ${error.message}` : error);
  process.exit(1);
});
