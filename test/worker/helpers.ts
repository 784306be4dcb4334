// Shared by the worker tests: organizations made with the operator functions the admin CLI runs, and an HTTP client
// for the worker under test (the real app inside workerd, with real D1, R2 and Queues).
import { env, exports } from "cloudflare:workers";
import { encode as encodePng } from "fast-png";
import { createKey } from "../../worker/operator/keys.ts";
import { createOrganization, type OrgOptions } from "../../worker/operator/organizations.ts";
import { database } from "../../worker/storage/database.ts";
import { encodeTiff } from "../fixtures/tiff-writer.ts";
import { checkAgainstDocument } from "./openapi-responses.ts";

export const BASE = "http://cellseg.test/api/v1";
export const RUNNER_TOKEN = "runner-token-one";

/** A one-cell segmentation as QuPath GeoJSON (a 3 x 3 square at (1, 1)), for imports of the 8 x 6 test image. */
export const ONE_SQUARE_GEOJSON = JSON.stringify({
  type: "FeatureCollection",
  features: [
    {
      type: "Feature",
      geometry: {
        type: "Polygon",
        coordinates: [
          [
            [1, 1],
            [4, 1],
            [4, 4],
            [1, 4],
            [1, 1],
          ],
        ],
      },
      properties: {},
    },
  ],
});

export interface TestOrg {
  id: string;
  slug: string;
  key: string;
}

let orgCounter = 0;

export async function createOrg(options: OrgOptions = {}): Promise<TestOrg> {
  const slug = `org-${++orgCounter}-${crypto.randomUUID().slice(0, 8)}`;
  const { id } = await createOrganization(database(env.DB), slug, options);
  const { key } = await createKey(database(env.DB), slug);
  return { id, slug, key };
}

export interface CallOptions {
  method?: string;
  key?: string | null;
  json?: unknown;
  body?: BodyInit;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** "manual" to see a redirect instead of following it. */
  redirect?: "follow" | "manual";
}

/** A request to the worker under test; its answer is checked against the OpenAPI document. */
export async function call(path: string, options: CallOptions = {}): Promise<Response> {
  const headers = new Headers(options.headers);
  if (options.key) headers.set("Authorization", `Bearer ${options.key}`);
  let body = options.body;
  if (options.json !== undefined) {
    headers.set("Content-Type", "application/json");
    body = JSON.stringify(options.json);
  }
  const url = path.startsWith("http") ? path : BASE + path;
  const method = options.method ?? (body ? "POST" : "GET");
  const response = await (exports as { default: Fetcher }).default.fetch(url, { method, headers, body, signal: options.signal, redirect: options.redirect });
  await checkAgainstDocument(method, url, response);
  return response;
}

export async function json<T = Record<string, unknown>>(response: Response): Promise<T> {
  return (await response.json()) as T;
}

/** A real 16-bit grayscale PNG. */
export function pngBytes(width = 8, height = 6): Uint8Array {
  const data = new Uint16Array(width * height).map((_, i) => i * 97);
  return encodePng({ width, height, data, depth: 16, channels: 1 });
}

/** A minimal real TIFF: little-endian, one uncompressed 16-bit strip (the fixture writer's). */
export function tiffBytes(width = 4, height = 3): Uint8Array {
  return encodeTiff([{ width, height, samplesPerPixel: 1, kind: "uint16", values: Uint16Array.from({ length: width * height }, (_, i) => i * 1000) }]);
}

export function multipartFile(name: string, bytes: Uint8Array, type = "application/octet-stream"): FormData {
  const form = new FormData();
  form.append("file", new File([bytes], name, { type }));
  return form;
}

/** Uploads through the streaming multipart endpoint and returns the ready image record. */
export async function uploadImage(org: TestOrg, name = "cells.png", bytes = pngBytes()): Promise<{ id: string; upload_status: string }> {
  const response = await call("/upload", { key: org.key, body: multipartFile(name, bytes) });
  if (response.status !== 201) throw new Error(`upload failed: ${response.status} ${await response.text()}`);
  return (await json<{ image: { id: string; upload_status: string } }>(response)).image;
}
