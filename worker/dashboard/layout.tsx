import type { Child } from "hono/jsx";
import type { Organization } from "../env.ts";
import { CSRF_FIELD } from "../middleware/session.ts";

type Section = "images" | "keys" | "models";

export interface PageContext {
  org: Organization;
  email: string | null;
  csrfToken: string;
  /** The member's organizations, when they belong to more than one (the switcher's choices). */
  organizations: { id: string; slug: string }[];
}

const NAV: { section: Section; href: string; label: string }[] = [
  { section: "images", href: "/dashboard", label: "Images" },
  { section: "models", href: "/dashboard/models", label: "Models" },
  { section: "keys", href: "/dashboard/keys", label: "API keys" },
];

function Document(props: { title: string; children: Child; scripts?: string[]; csrfToken?: string }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        {props.csrfToken && <meta name="csrf-token" content={props.csrfToken} />}
        <title>{`${props.title} · cellseg`}</title>
        <link rel="icon" href="/dashboard/assets/favicon.svg" type="image/svg+xml" />
        <link rel="stylesheet" href="/dashboard/assets/dashboard.css" />
        {(props.scripts ?? []).map((src) => (
          <script type="module" src={`/dashboard/assets/${src}`}></script>
        ))}
      </head>
      <body>{props.children}</body>
    </html>
  );
}

export function Layout(props: { page: PageContext; section: Section | null; title: string; children: Child; scripts?: string[]; wide?: boolean }) {
  const { org, email, csrfToken, organizations } = props.page;
  return (
    <Document title={props.title} scripts={["dashboard.js", ...(props.scripts ?? [])]} csrfToken={csrfToken}>
      <header class="topbar">
        <a class="brand" href="/dashboard">
          cellseg
        </a>
        <nav>
          {NAV.map((n) => (
            <a href={n.href} class={n.section === props.section ? "active" : ""}>
              {n.label}
            </a>
          ))}
        </nav>
        <div class="who">
          {organizations.length > 1 ? (
            <form method="post" action="/dashboard/switch-organization" class="org-switcher">
              <input type="hidden" name={CSRF_FIELD} value={csrfToken} />
              <select name="org_id" aria-label="Organization" title="Switch organization">
                {organizations.map((o) => (
                  <option value={o.id} selected={o.id === org.id}>
                    {o.slug}
                  </option>
                ))}
              </select>
              <noscript>
                <button type="submit" class="link">
                  Switch
                </button>
              </noscript>
            </form>
          ) : (
            <span class="org" title="Your organization">
              {org.slug}
            </span>
          )}
          {email && <span class="email">{email}</span>}
          <form method="post" action="/dashboard/logout">
            <input type="hidden" name={CSRF_FIELD} value={csrfToken} />
            <button class="link" type="submit">
              Sign out
            </button>
          </form>
        </div>
      </header>
      <main class={props.wide ? "wide" : ""}>{props.children}</main>
    </Document>
  );
}

/**
 * A progress bar. Its fill's width travels as data-fraction and dashboard.js sets it: the pages'
 * Content-Security-Policy (style-src 'self') refuses style attributes in the markup.
 */
export function Bar(props: { fraction: number; warn?: boolean }) {
  const fraction = Math.max(0, Math.min(1, props.fraction));
  return (
    <div class={props.warn ? "bar warn" : "bar"}>
      <div data-fraction={fraction.toFixed(3)}></div>
    </div>
  );
}

export function Message(props: { title: string; children: Child }) {
  return (
    <Document title={props.title}>
      <main class="message">
        <div class="card">
          <div class="brand">cellseg</div>
          <h1>{props.title}</h1>
          {props.children}
        </div>
      </main>
    </Document>
  );
}

export const formatBytes = (n: number | null): string => {
  if (n === null) return "—";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 && i > 0 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
};

/** "1 step", "2 steps". */
export const counted = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? "" : "s"}`;

export const formatDate = (ms: number | null): string => (ms === null ? "—" : `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC`);
