import { applyD1Migrations, env } from "cloudflare:test";

// Every test file starts from the migrated schema (with the public model seeded).
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
