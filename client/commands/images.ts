// `images`: every image of the organization, newest first, all pages followed.
import { parseArgs } from "node:util";
import type { ImageRecord } from "../../schema/api-records.ts";
import { CONNECTION_HELP, CONNECTION_OPTIONS, connect, UsageError } from "../connection.ts";
import { formatBytes, formatPixelSize, table } from "../format.ts";
import { everyItem } from "../pages.ts";

const STATUSES = ["pending", "processing", "ready", "failed"];

export const IMAGES_HELP = `npm run client -- images [--status ready|pending|processing|failed] [--json]

Lists your organization's images, newest first (every page).
  --status S   only images whose upload_status is S
  --json       print the records as JSON, one per line

${CONNECTION_HELP}`;

export async function imagesCommand(args: string[], out: NodeJS.WritableStream): Promise<number> {
  const { values } = parseArgs({ args, options: { ...CONNECTION_OPTIONS, status: { type: "string" }, json: { type: "boolean" } } });
  if (values.help) {
    out.write(`${IMAGES_HELP}\n`);
    return 0;
  }
  if (values.status !== undefined && !STATUSES.includes(values.status)) throw new UsageError(`--status must be one of ${STATUSES.join(", ")}`);
  const images = everyItem<ImageRecord>(connect(values), "/images", { upload_status: values.status });
  if (values.json) {
    for await (const image of images) out.write(`${JSON.stringify(image)}\n`);
    return 0;
  }
  const rows: string[][] = [];
  for await (const i of images) {
    const size = i.width && i.height ? `${i.width}x${i.height}` : "";
    rows.push([
      i.id,
      i.name,
      i.upload_status,
      i.size === null ? "" : formatBytes(i.size),
      size,
      i.upload_status === "ready" ? formatPixelSize(i) : "",
      i.created_at.replace("T", " ").slice(0, 19),
      i.upload_error ?? "",
    ]);
  }
  out.write(
    `${table(["id", "name", "status", "bytes", "pixels", "pixel size", "created", "error"], rows)}\n${rows.length} image${rows.length === 1 ? "" : "s"}\n`,
  );
  return 0;
}
