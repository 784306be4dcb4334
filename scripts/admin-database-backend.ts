// The admin CLI's commands where no local stack is running: the worker's operator functions
// (worker/operator/) on a drizzle database. Local state: the local D1 binding of wrangler's
// getPlatformProxy. `--env staging|production`: the D1 REST API (scripts/deployed-database.ts).
import type { OperatorDatabase } from "../worker/operator/database.ts";
import { createKey, listKeys, revokeKey } from "../worker/operator/keys.ts";
import { createLoginLink } from "../worker/operator/login-links.ts";
import { addMember, listMembers, removeMember } from "../worker/operator/members.ts";
import { createOrganization } from "../worker/operator/organizations.ts";
import { createRunnerToken, revokeRunnerToken } from "../worker/operator/runner-tokens.ts";
import type { AdminBackend } from "./admin-backends.ts";
import { deployedDatabase } from "./deployed-database.ts";
import { withLocalDatabase } from "./local-database.ts";
import { uploadPublicModel } from "./public-models.ts";
import type { Target } from "./wrangler.ts";

/** Runs one command's work on the database, opening and closing it as that database needs. */
type DatabaseSession = <T>(work: (db: OperatorDatabase) => Promise<T>) => Promise<T>;

function databaseBackend(where: string, target: Target, session: DatabaseSession): AdminBackend {
  return {
    where,
    createOrganization: (slug, options) => session((db) => createOrganization(db, slug, options)),
    createKey: (slug) => session((db) => createKey(db, slug)),
    listKeys: (slug) => session((db) => listKeys(db, slug)),
    revokeKey: (keyId) => session((db) => revokeKey(db, keyId)),
    createRunnerToken: (slugs) => session((db) => createRunnerToken(db, slugs)),
    revokeRunnerToken: (id) => session((db) => revokeRunnerToken(db, id)),
    addMember: (slug, email) => session((db) => addMember(db, slug, email)),
    removeMember: (slug, email) => session((db) => removeMember(db, slug, email)),
    listMembers: (slug) => session((db) => listMembers(db, slug)),
    createLoginLink: (slug, baseUrl) => session((db) => createLoginLink(db, slug, baseUrl)),
    // Files go to R2 through `wrangler r2 object put`, outside any session (one process on the state at a time).
    uploadPublicModel: async (id) => uploadPublicModel(target, id),
  };
}

/** Local state no stack is running on (the default one, or `--persist-to`). */
export function localBackend(target: Target): AdminBackend {
  return databaseBackend("the local database", target, (work) => withLocalDatabase(target, work));
}

/** A deployed environment; its credentials are asked for only by a command that needs the database. */
export function deployedBackend(target: Target & { env: "staging" | "production" }): AdminBackend {
  let db: OperatorDatabase | undefined;
  return databaseBackend(`the ${target.env} database`, target, (work) => work((db ??= deployedDatabase(target.env))));
}
