// `npm run admin -- models upload` against a running local stack: one file of a committed public
// model, stored in R2 where the model's database row points.
import type { MODEL_FILE_NAMES } from "../../schema/storage-keys.ts";
import { HttpError } from "../errors.ts";
import { getVisibleModel } from "../services/models.ts";

export async function putPublicModelFile(
  env: { DB: D1Database; BUCKET: R2Bucket },
  id: string,
  file: (typeof MODEL_FILE_NAMES)[number],
  body: ReadableStream | ArrayBuffer,
): Promise<string> {
  const model = await getVisibleModel(env.DB, "", id);
  // Only a public model's row (no organization's): an organization's own models are its trainings'.
  if (!model || model.orgId !== null) throw new HttpError(404, `No public model ${id}: apply the migrations first`);
  await env.BUCKET.put(model.r2Prefix + file, body);
  return model.r2Prefix + file;
}
