// Ranged reads through a signed storage URL (SIGNED_URL_MODE = "worker"), as RFC 9110 §14 has them:
// a satisfiable range is a 206 with its Content-Range, one that no byte can satisfy is a 416 that
// names the object's size, and never a 206 with an inverted range.
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { signStorageUrl } from "../../worker/services/signed-urls.ts";
import { call } from "./helpers.ts";

const ORIGIN = "http://cellseg.test";
const KEY = `orgs/ranges-${crypto.randomUUID()}/images/x/original`;
const EMPTY_KEY = `${KEY}-empty`;
const BYTES = new TextEncoder().encode("0123456789");

let url: string;
let emptyUrl: string;

beforeAll(async () => {
  await env.BUCKET.put(KEY, BYTES);
  await env.BUCKET.put(EMPTY_KEY, new Uint8Array(0));
  url = await signStorageUrl(env, ORIGIN, { method: "GET", key: KEY });
  emptyUrl = await signStorageUrl(env, ORIGIN, { method: "GET", key: EMPTY_KEY });
});

const get = (target: string, range?: string) => call(target, { headers: range ? { Range: range } : {} });
const bytesOf = async (response: Response) => new TextDecoder().decode(await response.arrayBuffer());

describe("a signed GET with a Range header", () => {
  it("answers a satisfiable range with 206 and exactly those bytes", async () => {
    const whole = await get(url);
    expect(whole.headers.get("X-Content-Type-Options")).toBe("nosniff"); // an upload is never sniffed into a page
    await whole.arrayBuffer();
    for (const [range, body, contentRange] of [
      ["bytes=2-4", "234", "bytes 2-4/10"],
      ["bytes=7-", "789", "bytes 7-9/10"],
      ["bytes=-3", "789", "bytes 7-9/10"],
      ["bytes=-50", "0123456789", "bytes 0-9/10"],
      ["bytes=8-100", "89", "bytes 8-9/10"],
    ]) {
      const response = await get(url, range);
      expect(response.status, range).toBe(206);
      expect(response.headers.get("Content-Range"), range).toBe(contentRange);
      expect(await bytesOf(response), range).toBe(body);
    }
  });

  it("answers bytes=-0 (a suffix of no bytes) with 416 and the object's size, not a 206 with an inverted range", async () => {
    const response = await get(url, "bytes=-0");
    expect(response.status).toBe(416);
    expect(response.headers.get("Content-Range")).toBe("bytes */10");
    expect(await response.json()).toEqual({ detail: "Range bytes=-0 is outside the object's 10 bytes" });
  });

  it("answers a range that starts past the end, or an inverted one, with 416", async () => {
    for (const range of ["bytes=10-", "bytes=10-12", "bytes=5-4"]) {
      const response = await get(url, range);
      expect(response.status, range).toBe(416);
      expect(response.headers.get("Content-Range"), range).toBe("bytes */10");
    }
  });

  it("answers any range of an empty object with 416, and the whole (empty) object without one", async () => {
    for (const range of ["bytes=-1", "bytes=0-", "bytes=-0"]) {
      const response = await get(emptyUrl, range);
      expect(response.status, range).toBe(416);
      expect(response.headers.get("Content-Range"), range).toBe("bytes */0");
    }
    const whole = await get(emptyUrl);
    expect(whole.status).toBe(200);
    expect(await bytesOf(whole)).toBe("");
  });

  it("serves the whole object without a Range header, or with one it does not understand", async () => {
    for (const range of [undefined, "bytes=0-1,4-5", "items=0-3"]) {
      const response = await get(url, range);
      expect(response.status, String(range)).toBe(200);
      expect(await bytesOf(response), String(range)).toBe("0123456789");
    }
  });
});
