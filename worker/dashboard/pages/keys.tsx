import type { ApiKey } from "../../services/api-keys.ts";
import { formatDate, Layout, type PageContext } from "../layout.tsx";

export function KeysPage(props: { page: PageContext; keys: ApiKey[] }) {
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
        <table class="list" id="keys">
          <thead>
            <tr>
              <th>Name</th>
              <th>Key</th>
              <th>Created</th>
              <th>Last used</th>
              <th>State</th>
              <th></th>
            </tr>
          </thead>
          <tbody>
            {props.keys.length === 0 && (
              <tr class="empty-row">
                <td colspan={6}>No keys yet.</td>
              </tr>
            )}
            {props.keys.map((k) => (
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
            ))}
          </tbody>
        </table>
      </section>
    </Layout>
  );
}
