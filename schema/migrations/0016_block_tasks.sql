ALTER TABLE `jobs` ADD `parent_job_id` text;--> statement-breakpoint
ALTER TABLE `jobs` ADD `block_index` integer;--> statement-breakpoint
ALTER TABLE `jobs` ADD `blocks_total` integer;--> statement-breakpoint
ALTER TABLE `jobs` ADD `blocks_done` integer;--> statement-breakpoint
ALTER TABLE `jobs` ADD `blocks_glass` integer;--> statement-breakpoint
CREATE UNIQUE INDEX `jobs_parent_block` ON `jobs` (`parent_job_id`,`block_index`);--> statement-breakpoint
CREATE INDEX `jobs_kind_status` ON `jobs` (`kind`,`status`);