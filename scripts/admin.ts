// npm run admin -- org create <slug> [--plan free|pro|enterprise] [--storage-cap N] [--analysis-cap N]
//                  key create <org-slug> | key list <org-slug> | key revoke <key-id>
//                  member add <org-slug> <email> | member list <org-slug> | member remove <org-slug> <email>
//                  login-link <org-slug> [--url http://127.0.0.1:8787]
//                  base-model upload
//                  [--env staging|production]   (default: the local database of `npm start`)
import { parseArgs } from "node:util";
import type { Plan } from "../schema/db.ts";
import { AdminInputError, addMemberSql, createKeySql, createOrganizationSql, listKeysSql, listMembersSql, loginLinkSql, removeMemberSql, revokeKeySql } from "./admin-sql.ts";
import { uploadBaseModel } from "./base-model.ts";
import { applyMigrations, d1, type Target } from "./wrangler.ts";

const USAGE = `usage: npm run admin -- <command> [--env staging|production]
  org create <slug> [--plan free|pro|enterprise] [--storage-cap N] [--analysis-cap N]
  key create <org-slug>      prints the new key as the last line (shown once; only its hash is stored)
  key list <org-slug>
  key revoke <key-id>
  member add <org-slug> <email>      lets this person into the dashboard (deployed: signed in by Cloudflare Access)
  member list <org-slug>
  member remove <org-slug> <email>
  login-link <org-slug> [--url U]    prints a one-time dashboard sign-in URL as the last line (15 minutes, single use)
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
      url: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [resource, action, arg, arg2] = positionals;
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
  } else if (resource === "member" && (action === "add" || action === "remove")) {
    const slug = need("<org-slug>");
    if (!arg2) throw new AdminInputError(`missing <email>\n${USAGE}`);
    if (action === "add") {
      d1(target, addMemberSql(slug, arg2));
      if (!d1(target, listMembersSql(slug)).some((row) => row.email === arg2.toLowerCase())) throw new AdminInputError(`no organization with slug ${slug}`);
      console.log(`${arg2.toLowerCase()} is a member of ${slug}`);
    } else {
      if (d1(target, removeMemberSql(slug, arg2)).length === 0) throw new AdminInputError(`${arg2} is not a member of ${slug}`);
      console.log(`removed ${arg2.toLowerCase()} from ${slug}; their dashboard sessions end with their next request`);
    }
  } else if (resource === "member" && action === "list") {
    const rows = d1(target, listMembersSql(need("<org-slug>")));
    for (const row of rows) console.log(`${row.email}  added ${new Date(Number(row.created_at)).toISOString()}`);
    if (rows.length === 0) console.log("no members");
  } else if (resource === "login-link") {
    // `login-link <slug>`: the slug is the action position.
    const slug = action;
    if (!slug) throw new AdminInputError(`missing <org-slug>\n${USAGE}`);
    const baseUrl = values.url ?? `http://127.0.0.1:${process.env.PORT ?? 8787}`;
    const { url, tokenHash, sql } = await loginLinkSql(slug, baseUrl);
    d1(target, sql);
    if (d1(target, `SELECT token_hash FROM dashboard_login_links WHERE token_hash = '${tokenHash}'`).length === 0) throw new AdminInputError(`no organization with slug ${slug}`);
    console.log(`one-time sign-in link for ${slug} (valid 15 minutes, works once):`);
    console.log(url);
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
