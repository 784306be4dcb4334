CREATE TABLE `dashboard_login_links` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `dashboard_sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`token_hash` text NOT NULL,
	`org_id` text NOT NULL,
	`email` text,
	`expires_at` integer NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `dashboard_sessions_token_hash_unique` ON `dashboard_sessions` (`token_hash`);--> statement-breakpoint
CREATE INDEX `dashboard_sessions_org` ON `dashboard_sessions` (`org_id`);--> statement-breakpoint
CREATE TABLE `organization_members` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`email` text NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `organization_members_org_email` ON `organization_members` (`org_id`,`email`);--> statement-breakpoint
CREATE INDEX `organization_members_email` ON `organization_members` (`email`);--> statement-breakpoint
ALTER TABLE `api_keys` ADD `name` text;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `last_used_at` integer;