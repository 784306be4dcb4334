// The block `npm start` ends with: what a new user needs to go on, with the stack's real port.
import { describe, expect, it } from "vitest";
import { readyBanner } from "../../scripts/ready-banner.ts";

const stack = { url: "http://127.0.0.1:9123", slug: "demo", loginLink: "http://127.0.0.1:9123/dashboard/login?token=t0k3n" };

describe("npm start's closing block", () => {
  it("on the first start shows the addresses, the sign-in link, the key and export lines that hold it", () => {
    const banner = readyBanner({ ...stack, createdKey: "csk_first" });
    expect(banner).toContain("API:           http://127.0.0.1:9123/api/v1");
    expect(banner).toContain("Dashboard:     http://127.0.0.1:9123/dashboard");
    expect(banner).toContain("    http://127.0.0.1:9123/dashboard/login?token=t0k3n");
    expect(banner).toContain("    csk_first");
    expect(banner.split("\n")).toContain("export CELLSEG_API=http://127.0.0.1:9123/api/v1 CELLSEG_KEY=csk_first");
  });

  it("on a later start names the command that makes a key, and export lines that run it", () => {
    const banner = readyBanner({ ...stack, createdKey: null });
    expect(banner).not.toContain("csk_");
    expect(banner).toContain("    npm run admin -- key create demo");
    expect(banner.split("\n")).toContain("export CELLSEG_API=http://127.0.0.1:9123/api/v1 CELLSEG_KEY=$(npm run -s admin -- key create demo | tail -n 1)");
  });
});
