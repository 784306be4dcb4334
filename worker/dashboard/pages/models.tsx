import type { Model } from "../../services/models.ts";
import { formatDate, Layout, type PageContext } from "../layout.tsx";

function metrics(training: unknown): string {
  if (!training || typeof training !== "object") return "—";
  const t = training as Record<string, unknown>;
  const parts: string[] = [];
  const validation = (t.validation ?? {}) as Record<string, unknown>;
  if (typeof validation.ap50_after === "number") {
    const before = typeof validation.ap50_before === "number" ? ` (base ${validation.ap50_before.toFixed(3)})` : "";
    parts.push(`AP@0.5 ${validation.ap50_after.toFixed(3)}${before}`);
  }
  if (typeof t.steps === "number") parts.push(`${t.steps} steps`);
  if (Array.isArray(t.image_ids)) parts.push(`${t.image_ids.length} image(s)`);
  return parts.length ? parts.join(" · ") : "—";
}

export function ModelsPage(props: { page: PageContext; models: Model[] }) {
  const own = props.models.filter((m) => m.orgId !== null);
  const pub = props.models.filter((m) => m.orgId === null);
  const table = (models: Model[], empty: string) =>
    models.length === 0 ? <p class="empty">{empty}</p> : (
      <table class="list">
        <thead><tr><th>Name</th><th>Version</th><th>Description</th><th>Training</th><th>Created</th></tr></thead>
        <tbody>
          {models.map((m) => (
            <tr data-model-id={m.id}>
              <td><strong>{m.name}</strong><div class="muted mono">{m.id}</div></td>
              <td>{m.version}</td>
              <td>{m.description ?? "—"}</td>
              <td>{metrics(m.training)}</td>
              <td>{formatDate(m.createdAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    );
  return (
    <Layout page={props.page} section="models" title="Models">
      <section>
        <h2>Your organization's models</h2>
        {table(own, "No models of your own yet: fine-tune one with POST /api/v1/job/training.")}
      </section>
      <section>
        <h2>Public models</h2>
        {table(pub, "No public models.")}
      </section>
    </Layout>
  );
}
