// npm run admin -- org create <slug> [--plan free|pro|enterprise] [--storage-cap N] [--analysis-cap N]
//                  key create <org-slug> | key list <org-slug> | key revoke <key-id>
//                  runner-token create <org-slug> [<org-slug> ...] | runner-token revoke <id>
//                  member add <org-slug> <email> | member list <org-slug> | member remove <org-slug> <email>
//                  login-link <org-slug> [--url http://127.0.0.1:8787]
//                  models upload
//                  [--env staging|production]   (default: the local database of `npm start`)
//                  [--persist-to <dir>]          (local state directory; default wrangler's .wrangler/state)
// Every path runs the worker's own operator functions (worker/operator/). Locally, while `npm start`
// runs, through the running worker's operator API (two processes on one SQLite file answer
// SQLITE_BUSY); otherwise on the database directly: local state through wrangler's
// getPlatformProxy, deployed environments through the D1 REST API.
import { parseArgs } from "node:util";
import type { Plan } from "../schema/db.ts";
import { HttpError } from "../worker/errors.ts";
import { type AdminBackend, operatorBackend } from "./admin-backends.ts";
import { PUBLIC_MODEL_DIRS } from "./public-models.ts";
import { runningStack } from "./running-stack.ts";
import { UsageError } from "./usage-error.ts";
import { applyMigrations, type Target } from "./wrangler.ts";

const USAGE = `usage: npm run admin -- <command> [--env staging|production]
  org create <slug> [--plan free|pro|enterprise] [--storage-cap N] [--analysis-cap N]
  key create <org-slug>      prints the new key as the last line (shown once; only its hash is stored)
  key list <org-slug>
  key revoke <key-id>
  runner-token create <org-slug> [<org-slug> ...]   prints a runner token as the last line that leases only
                             these organizations' jobs (a lab's own runner; shown once)
  runner-token revoke <id>
  member add <org-slug> <email>      lets this person into the dashboard (deployed: signed in by Cloudflare Access)
  member list <org-slug>
  member remove <org-slug> <email>
  login-link <org-slug> [--url U]    prints a one-time dashboard sign-in URL as the last line (15 minutes, single use)
  models upload              puts each committed public model (gpu-runner/models/cpsam, cpsam-large, cpsam-histology) where its row points`;

function intOption(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new UsageError(`--${name} must be a whole number >= 0`);
  return n;
}

/** Local state with no stack on it, or a deployed environment. Loaded only then: it loads wrangler (seconds). */
async function databaseBackend(target: Target): Promise<AdminBackend> {
  const { deployedBackend, localBackend } = await import("./admin-database-backend.ts");
  return target.env ? deployedBackend({ ...target, env: target.env }) : localBackend(target);
}

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      env: { type: "string" },
      "persist-to": { type: "string" },
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
  if (values.env !== undefined && values.env !== "staging" && values.env !== "production") throw new UsageError("--env must be staging or production");
  const target: Target = { env: values.env as Target["env"], persistTo: values["persist-to"] };
  const stack = target.env ? null : runningStack(target);
  // A running stack applied the migrations when it started; applying them again would open its file.
  if (!target.env && !stack) applyMigrations(target);
  const backend: AdminBackend = stack ? operatorBackend(stack) : await databaseBackend(target);

  const need = (what: string) => {
    if (!arg) throw new UsageError(`missing ${what}\n${USAGE}`);
    return arg;
  };

  if (resource === "org" && action === "create") {
    const slug = need("<slug>");
    const { id } = await backend.createOrganization(slug, {
      plan: values.plan as Plan | undefined,
      storageCap: intOption(values["storage-cap"], "storage-cap"),
      analysisCap: intOption(values["analysis-cap"], "analysis-cap"),
    });
    console.log(`created organization ${slug} (${id}) in ${backend.where}`);
  } else if (resource === "key" && action === "create") {
    const slug = need("<org-slug>");
    const { id, key } = await backend.createKey(slug);
    console.log(`key ${id} for ${slug} (shown once, store it now):`);
    console.log(key);
  } else if (resource === "key" && action === "list") {
    const rows = await backend.listKeys(need("<org-slug>"));
    for (const row of rows) {
      const state = row.revoked_at ? `revoked ${new Date(Number(row.revoked_at)).toISOString()}` : "active";
      console.log(`${row.id}  ${row.prefix}…  created ${new Date(Number(row.created_at)).toISOString()}  ${state}`);
    }
    if (rows.length === 0) console.log("no keys");
  } else if (resource === "key" && action === "revoke") {
    await backend.revokeKey(need("<key-id>"));
    console.log(`revoked key ${arg}`);
  } else if (resource === "runner-token" && action === "create") {
    const slugs = positionals.slice(2);
    if (slugs.length === 0) throw new UsageError(`missing <org-slug>\n${USAGE}`);
    const { id, token } = await backend.createRunnerToken(slugs);
    console.log(`runner token ${id} for ${slugs.join(", ")}: a runner with it leases only their jobs (shown once, store it now):`);
    console.log(token);
  } else if (resource === "runner-token" && action === "revoke") {
    await backend.revokeRunnerToken(need("<id>"));
    console.log(`revoked runner token ${arg}`);
  } else if (resource === "member" && (action === "add" || action === "remove")) {
    const slug = need("<org-slug>");
    if (!arg2) throw new UsageError(`missing <email>\n${USAGE}`);
    if (action === "add") {
      await backend.addMember(slug, arg2);
      console.log(`${arg2.toLowerCase()} is a member of ${slug}`);
    } else {
      await backend.removeMember(slug, arg2);
      console.log(`removed ${arg2.toLowerCase()} from ${slug}; their dashboard sessions end with their next request`);
    }
  } else if (resource === "member" && action === "list") {
    const rows = await backend.listMembers(need("<org-slug>"));
    for (const row of rows) console.log(`${row.email}  added ${new Date(Number(row.created_at)).toISOString()}`);
    if (rows.length === 0) console.log("no members");
  } else if (resource === "login-link") {
    // `login-link <slug>`: the slug is the action position.
    const slug = action;
    if (!slug) throw new UsageError(`missing <org-slug>\n${USAGE}`);
    const url = await backend.createLoginLink(slug, values.url ?? stack?.url ?? `http://127.0.0.1:${process.env.PORT ?? 8787}`);
    console.log(`one-time sign-in link for ${slug} (valid 15 minutes, works once):`);
    console.log(url);
  } else if (resource === "models" && action === "upload") {
    for (const [id, dir] of Object.entries(PUBLIC_MODEL_DIRS)) {
      if (await backend.uploadPublicModel(id)) console.log(`uploaded ${id} to the R2 bucket of ${backend.where}`);
      else if (id === "cpsam") throw new UsageError(`no base model at ${dir}/${id}.onnx`);
      else console.log(`${id}: no weights committed at ${dir}/${id}.onnx yet; nothing to upload`);
    }
  } else {
    throw new UsageError(`unknown command: ${positionals.join(" ")}\n${USAGE}`);
  }
}

main(process.argv.slice(2)).catch((error) => {
  // The worker's refusals of an input (422, 404, 409) are the operator's to fix, like usage errors.
  const refused = error instanceof UsageError || (error instanceof HttpError && error.status < 500);
  console.error(refused ? `error: ${error.message}` : error);
  process.exit(1);
});
