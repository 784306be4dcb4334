// R2's S3-compatible API, for what the R2 binding cannot do: listing the parts a client PUT
// straight to R2 through presigned URLs (SIGNED_URL_MODE = "r2").
import { AwsClient } from "aws4fetch";
import type { Bindings } from "../env.ts";
import { encodeKeyPath } from "./signed-urls.ts";

export async function listR2Parts(env: Bindings, key: string, uploadId: string): Promise<{ partNumber: number; etag: string; size: number }[]> {
  const client = new AwsClient({ accessKeyId: env.R2_ACCESS_KEY_ID!, secretAccessKey: env.R2_SECRET_ACCESS_KEY!, service: "s3", region: "auto" });
  const parts: { partNumber: number; etag: string; size: number }[] = [];
  let marker = "0";
  for (;;) {
    const url = new URL(`https://${env.R2_ACCOUNT_ID}.r2.cloudflarestorage.com/${env.R2_BUCKET_NAME}/${encodeKeyPath(key)}`);
    url.searchParams.set("uploadId", uploadId);
    url.searchParams.set("part-number-marker", marker);
    const response = await client.fetch(url.toString());
    if (!response.ok) throw new Error(`ListParts failed: ${response.status}`);
    const xml = await response.text();
    for (const part of xml.matchAll(/<Part>([\s\S]*?)<\/Part>/g)) {
      const body = part[1]!; // the pattern's one group always takes part
      const field = (name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(body)?.[1] ?? "";
      parts.push({ partNumber: Number(field("PartNumber")), etag: field("ETag").replaceAll("&quot;", "").replaceAll('"', ""), size: Number(field("Size")) });
    }
    const next = /<NextPartNumberMarker>(\d+)<\/NextPartNumberMarker>/.exec(xml)?.[1];
    if (!/<IsTruncated>true<\/IsTruncated>/.test(xml) || !next) return parts;
    marker = next;
  }
}
