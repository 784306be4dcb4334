// What the client says when the service cannot be reached: the address it tried and why.
import { describe, expect, it } from "vitest";
import { freePort } from "../../scripts/local-stack.ts";
import { Http } from "../../client/http.ts";

describe("the client's network errors", () => {
  it("name the address that could not be reached and the system's reason", async () => {
    // A port nothing listens on: the connection is refused at once.
    const api = `http://127.0.0.1:${await freePort()}/api/v1`;
    const http = new Http({ api, key: "csk_test", retry: { attempts: 1, baseMs: 1, maxMs: 1 } });
    await expect(http.json("GET", "/images")).rejects.toThrow(`GET /images: fetch failed (ECONNREFUSED) at ${api}/images`);
  });
});
