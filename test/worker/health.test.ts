import { SELF } from "cloudflare:test";
import { expect, it } from "vitest";
it("answers", async () => {
  const r = await SELF.fetch("http://x/api/v1/health");
  expect(await r.json()).toEqual({ ok: true });
});
