CREATE TABLE `runner_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`token_hash` text NOT NULL,
	`prefix` text NOT NULL,
	`org_ids` text NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `runner_tokens_token_hash_unique` ON `runner_tokens` (`token_hash`);