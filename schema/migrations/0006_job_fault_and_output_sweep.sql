ALTER TABLE `jobs` ADD `fault` text;--> statement-breakpoint
ALTER TABLE `jobs` ADD `outputs_cleared_at` integer;