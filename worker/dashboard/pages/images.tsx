import type { Image } from "../../services/images.ts";
import type { usage } from "../../services/usage.ts";
import { Bar, formatBytes, formatDate, Layout, type PageContext } from "../layout.tsx";
import { ListTable } from "../list-table.tsx";

type Usage = Awaited<ReturnType<typeof usage>>;

function Meter(props: { label: string; used: number; cap: number; id: string }) {
  const share = props.cap > 0 ? Math.min(1, props.used / props.cap) : 1;
  return (
    <div class="meter" id={props.id}>
      <div class="meter-label">
        <span>{props.label}</span>
        <strong>
          {props.used.toLocaleString("en-US")} / {props.cap.toLocaleString("en-US")}
        </strong>
      </div>
      <Bar fraction={share} warn={share >= 0.9} />
    </div>
  );
}

export function StatusBadge(props: { status: string }) {
  return <span class={`badge ${props.status.toLowerCase()}`}>{props.status.toLowerCase()}</span>;
}

export function ImagesPage(props: { page: PageContext; usage: Usage; images: Image[] }) {
  const { usage, images } = props;
  return (
    <Layout page={props.page} section="images" title="Images">
      <section class="usage">
        <h2>
          Usage <span class="muted">· {usage.plan} plan</span>
        </h2>
        <div class="meters">
          <Meter id="usage-storage" label="Images and imports stored" used={usage.storage.used} cap={usage.storage.cap} />
          <Meter id="usage-analyses" label="Analyses this month" used={usage.analyses_this_month.used} cap={usage.analyses_this_month.cap} />
        </div>
      </section>
      <section>
        <div id="dropzone" class="dropzone" tabindex={0}>
          <input id="file-input" type="file" multiple accept=".tif,.tiff,.png,.jpg,.jpeg,image/tiff,image/png,image/jpeg" hidden />
          <p>
            <strong>Drop microscopy images here</strong> or{" "}
            <button type="button" class="link" id="choose-files">
              choose files
            </button>
          </p>
          <p class="muted">TIFF (8/16-bit, multi-channel), PNG or JPEG. Large files upload in resumable parts.</p>
        </div>
        <ul id="uploads" class="uploads"></ul>
      </section>
      <section>
        <h2>
          Images <span class="muted">· {images.length}</span>
        </h2>
        {images.length === 0 ? (
          <p class="empty">No images yet. Upload one above to segment it.</p>
        ) : (
          <ListTable
            id="images"
            headings={["Name", "Status", "Size", "Dimensions", "Uploaded", ""]}
            items={images}
            row={(image) => (
              <tr data-image-id={image.id}>
                <td>
                  <a href={`/dashboard/images/${image.id}`}>{image.name}</a>
                  {image.uploadError && <div class="error-text">{image.uploadError}</div>}
                </td>
                <td>
                  <StatusBadge status={image.status} />
                </td>
                <td>{formatBytes(image.size)}</td>
                <td>{image.width ? `${image.width} × ${image.height} · ${image.channels} ch · ${image.bitDepth}-bit` : "—"}</td>
                <td>{formatDate(image.createdAt)}</td>
                <td class="actions">
                  <button type="button" class="danger small" data-delete-image={image.id} data-name={image.name}>
                    Delete
                  </button>
                </td>
              </tr>
            )}
          />
        )}
      </section>
    </Layout>
  );
}
