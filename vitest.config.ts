import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig(async () => ({
  test: {
    projects: [
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: {
                // Test-only secrets; deployed environments get theirs from `wrangler secret`.
                SIGNING_KEY: "test-signing-key-0123456789abcdef",
                RUNNER_TOKENS: "runner-token-one,runner-token-two",
                OPERATOR_SECRET: "operator-secret-for-tests",
                TEST_MIGRATIONS: await readD1Migrations("./schema/migrations"),
              },
            },
          }),
        ],
        // TIFF fixtures (test/reference/tiff) come in as `?inline` data: URLs, as the golden PNG does.
        assetsInclude: ["**/*.tif"],
        test: { name: "worker", include: ["test/worker/**/*.test.ts"], setupFiles: ["./test/worker/setup.ts"] },
      },
      {
        test: { name: "node", include: ["test/{engine,training,runner,scripts,e2e,api,client}/**/*.test.ts"], environment: "node" },
      },
      // The fault tests take minutes (leases must run out, a worker stays down 30 s), more than
      // `npm test` can give them: `npm run bench:load -- --faults` runs them.
      ...(process.env.CELLSEG_FAULT_TESTS ? [{ test: { name: "faults", include: ["test/faults/**/*.test.ts"], environment: "node" as const } }] : []),
    ],
  },
}));
