// Shared by the worker tests: organizations made with the operator functions the admin CLI runs, and an HTTP client
// for the worker under test (the real app inside workerd, with real D1, R2 and Queues).
import { env, exports } from "cloudflare:workers";
import { encode as encodePng } from "fast-png";
import { createKey } from "../../worker/operator/keys.ts";
import { createOrganization, type OrgOptions } from "../../worker/operator/organizations.ts";
import { database } from "../../worker/services/database.ts";
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

/** A minimal real TIFF: little-endian, one uncompressed 16-bit strip. */
export function tiffBytes(width = 4, height = 3): Uint8Array {
  const entries: [number, number, number, number][] = [
    [256, 3, 1, width],
    [257, 3, 1, height],
    [258, 3, 1, 16],
    [259, 3, 1, 1],
    [262, 3, 1, 1],
    [273, 4, 1, 0],
    [277, 3, 1, 1],
    [278, 3, 1, height],
    [279, 4, 1, width * height * 2],
  ];
  const ifdOffset = 8;
  const ifdSize = 2 + entries.length * 12 + 4;
  const dataOffset = ifdOffset + ifdSize;
  entries[5][3] = dataOffset;
  const out = new Uint8Array(dataOffset + width * height * 2);
  const view = new DataView(out.buffer);
  out.set([0x49, 0x49, 42, 0]);
  view.setUint32(4, ifdOffset, true);
  view.setUint16(ifdOffset, entries.length, true);
  entries.forEach(([tag, type, count, value], i) => {
    const at = ifdOffset + 2 + i * 12;
    view.setUint16(at, tag, true);
    view.setUint16(at + 2, type, true);
    view.setUint32(at + 4, count, true);
    if (type === 3) view.setUint16(at + 8, value, true);
    else view.setUint32(at + 8, value, true);
  });
  for (let i = 0; i < width * height; i++) view.setUint16(dataOffset + i * 2, i * 1000, true);
  return out;
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
