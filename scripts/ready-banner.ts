// The block `npm start` prints last, once the worker and the runner are up: everything a new user
// needs to go on, in one place that no later startup message scrolls away.

interface ReadyStack {
  /** The worker's origin, e.g. http://127.0.0.1:8787 (the real port). */
  url: string;
  /** The organization `npm start` made on first start. */
  slug: string;
  /** A one-time dashboard sign-in URL for `slug`. */
  loginLink: string;
  /** The key made on this start, or null: later starts have none to show (only its hash is stored). */
  createdKey: string | null;
}

export function readyBanner({ url, slug, loginLink, createdKey }: ReadyStack): string {
  const api = `${url}/api/v1`;
  const rule = "─".repeat(78);
  const key = createdKey
    ? [`  API key of '${slug}' (shown this once; only its hash is stored):`, `    ${createdKey}`]
    : [`  API key: the one printed on the first start (only its hash is stored), or a new one from`, `    npm run admin -- key create ${slug}`];
  const exportKey = createdKey ? `CELLSEG_KEY=${createdKey}` : `CELLSEG_KEY=$(npm run -s admin -- key create ${slug} | tail -n 1)`;
  return [
    "",
    rule,
    "cellseg is running (Ctrl-C stops everything)",
    "",
    `  API:           ${api}   (reference: ${api}/docs)`,
    `  Dashboard:     ${url}/dashboard`,
    `  Sign in once (15 minutes; another link: npm run admin -- login-link ${slug}):`,
    `    ${loginLink}`,
    ...key,
    "",
    "  For the client and the curl walkthrough (docs/api.md), paste into another terminal:",
    "",
    `export CELLSEG_API=${api} ${exportKey}`,
    rule,
    "",
  ].join("\n");
}
