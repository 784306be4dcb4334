import type { ApiKey } from "../../services/api-keys.ts";
import type { linkSessionView } from "../../services/dashboard-sessions.ts";
import { formatDate, Layout, type PageContext } from "../layout.tsx";
import { ListTable } from "../list-table.tsx";

type LinkSession = ReturnType<typeof linkSessionView>;

/** The organization's sign-in-link sessions, each revocable by any member. */
function LinkSessions(props: { sessions: LinkSession[] }) {
  return (
    <section>
      <h2>Sign-in link sessions</h2>
      <p class="muted">
        Browsers signed in to this organization with a one-time link. Revoke one you do not recognise: it is signed out at its next request. Revoking this
        browser's signs you out.
      </p>
      <ListTable
        id="sessions"
        headings={["Signed in", "Expires", "", ""]}
        items={props.sessions}
        empty="No sign-in link sessions."
        row={(s) => (
          <tr data-session-id={s.id}>
            <td>{formatDate(Date.parse(s.created_at))}</td>
            <td>{formatDate(Date.parse(s.expires_at))}</td>
            <td>{s.current && <span class="badge ready">this browser</span>}</td>
            <td class="actions">
              <button type="button" class="danger small" data-revoke-session={s.id} data-current={String(s.current)}>
                Revoke
              </button>
            </td>
          </tr>
        )}
      />
    </section>
  );
}

export function KeysPage(props: { page: PageContext; keys: ApiKey[]; sessions: LinkSession[] | null }) {
  return (
    <Layout page={props.page} section="keys" title="API keys">
      <section>
        <h2>API keys</h2>
        <p class="muted">
          Programs use a key as <code>Authorization: Bearer &lt;key&gt;</code> against <code>/api/v1</code>. A key is shown once, when it is created; only its
          hash is stored.
        </p>
        <form id="create-key" class="inline-form">
          <input type="text" name="name" maxlength={100} placeholder="Name (optional), e.g. lab pipeline" />
          <button type="submit" class="primary">
            Create API key
          </button>
        </form>
        <div id="new-key" class="new-key" hidden>
          <p>
            <strong>Your new key.</strong> Copy it now: it will not be shown again.
          </p>
          <div class="copy-row">
            <code id="new-key-value"></code>
            <button type="button" id="copy-key">
              Copy
            </button>
          </div>
        </div>
      </section>
      <section>
        <ListTable
          id="keys"
          headings={["Name", "Key", "Created", "Last used", "State", ""]}
          items={props.keys}
          empty="No keys yet."
          row={(k) => (
            <tr data-key-id={k.id} class={k.revokedAt ? "revoked" : ""}>
              <td>{k.name ?? <span class="muted">unnamed</span>}</td>
              <td>
                <code>{k.prefix}…</code>
              </td>
              <td>{formatDate(k.createdAt)}</td>
              <td>{k.lastUsedAt ? formatDate(k.lastUsedAt) : <span class="muted">never</span>}</td>
              <td>{k.revokedAt ? <span class="badge failed">revoked</span> : <span class="badge ready">active</span>}</td>
              <td class="actions">
                {!k.revokedAt && (
                  <button type="button" class="danger small" data-revoke-key={k.id} data-label={k.name ?? k.prefix}>
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          )}
        />
      </section>
      {props.sessions && <LinkSessions sessions={props.sessions} />}
    </Layout>
  );
}
