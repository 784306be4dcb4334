// Puts ROI artifacts into the test's real (local) R2 bucket and reads them back as streams, the
// way the export route gets them.

import { env } from "cloudflare:workers";
import type { Roi } from "../../../../schema/roi.ts";
import { encodeRoiArtifact } from "../../../../common/roi-artifact/writer.ts";
import type { RoiArtifactDescription } from "../../../../common/roi-artifact/writer.ts";
import { concatBytes } from "./streams.ts";

function bucket(): R2Bucket {
  return (env as unknown as { BUCKET: R2Bucket }).BUCKET;
}

export async function encodeToBytes(description: RoiArtifactDescription, rois: readonly Roi[]): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of encodeRoiArtifact(description, rois)) chunks.push(chunk);
  return concatBytes(chunks);
}

export async function storeArtifact(key: string, bytes: Uint8Array): Promise<void> {
  await bucket().put(key, bytes);
}

export async function artifactBody(key: string): Promise<ReadableStream<Uint8Array>> {
  const object = await bucket().get(key);
  if (!object) throw new Error(`no artifact at ${key}`);
  return object.body;
}
