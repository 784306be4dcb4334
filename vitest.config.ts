import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: [
      {
        plugins: [cloudflareTest({ wrangler: { configPath: "./wrangler.toml" } })],
        test: { name: "worker", include: ["test/worker/**/*.test.ts"] },
      },
      {
        test: { name: "node", include: ["test/{engine,training,runner,e2e}/**/*.test.ts"], environment: "node" },
      },
    ],
  },
});
