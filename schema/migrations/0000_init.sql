CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`key_hash` text NOT NULL,
	`prefix` text NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`revoked_at` integer,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_key_hash_unique` ON `api_keys` (`key_hash`);--> statement-breakpoint
CREATE INDEX `api_keys_org` ON `api_keys` (`org_id`);--> statement-breakpoint
CREATE TABLE `images` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`name` text NOT NULL,
	`status` text NOT NULL,
	`size` integer,
	`r2_key` text NOT NULL,
	`format` text,
	`width` integer,
	`height` integer,
	`channels` integer,
	`bit_depth` integer,
	`planes` integer,
	`upload_id` text,
	`part_size` integer,
	`part_count` integer,
	`upload_error` text,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`updated_at` integer,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `images_org` ON `images` (`org_id`);--> statement-breakpoint
CREATE TABLE `jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`kind` text NOT NULL,
	`status` text DEFAULT 'SUBMITTED' NOT NULL,
	`image_id` text,
	`model_id` text,
	`input` text,
	`dedupe_key` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`max_attempts` integer NOT NULL,
	`enqueued_at` integer,
	`lease_holder` text,
	`lease_token` text,
	`lease_expires_at` integer,
	`progress` real,
	`stage` text,
	`reason` text,
	`result` text,
	`segmentation_id` text,
	`result_model_id` text,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`started_at` integer,
	`finished_at` integer,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `jobs_org_kind_status` ON `jobs` (`org_id`,`kind`,`status`);--> statement-breakpoint
CREATE INDEX `jobs_status_lease` ON `jobs` (`status`,`lease_expires_at`);--> statement-breakpoint
CREATE INDEX `jobs_org_created` ON `jobs` (`org_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `models` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text,
	`name` text NOT NULL,
	`version` text NOT NULL,
	`description` text,
	`base_model_id` text,
	`r2_prefix` text NOT NULL,
	`training` text,
	`training_job_id` text,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `models_training_job_id_unique` ON `models` (`training_job_id`);--> statement-breakpoint
CREATE INDEX `models_org` ON `models` (`org_id`);--> statement-breakpoint
CREATE TABLE `organizations` (
	`id` text PRIMARY KEY NOT NULL,
	`slug` text NOT NULL,
	`plan` text DEFAULT 'free' NOT NULL,
	`storage_cap` integer,
	`analysis_cap` integer,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `organizations_slug_unique` ON `organizations` (`slug`);--> statement-breakpoint
CREATE TABLE `pull_queue_messages` (
	`id` text PRIMARY KEY NOT NULL,
	`queue` text NOT NULL,
	`body` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`visible_at` integer NOT NULL,
	`lease_id` text,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `pull_queue_messages_lease_id_unique` ON `pull_queue_messages` (`lease_id`);--> statement-breakpoint
CREATE INDEX `pull_queue_visible` ON `pull_queue_messages` (`queue`,`visible_at`);--> statement-breakpoint
CREATE TABLE `segmentations` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`image_id` text NOT NULL,
	`image_name` text NOT NULL,
	`job_id` text,
	`model_id` text,
	`model_name` text,
	`model_version` text,
	`source` text NOT NULL,
	`roi_count` integer NOT NULL,
	`confluency` real NOT NULL,
	`width` integer NOT NULL,
	`height` integer NOT NULL,
	`artifact_key` text NOT NULL,
	`timings` text,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `segmentations_job_id_unique` ON `segmentations` (`job_id`);--> statement-breakpoint
CREATE INDEX `segmentations_image` ON `segmentations` (`org_id`,`image_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `upload_parts` (
	`image_id` text NOT NULL,
	`part_number` integer NOT NULL,
	`size` integer NOT NULL,
	`etag` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `upload_parts_pk` ON `upload_parts` (`image_id`,`part_number`);