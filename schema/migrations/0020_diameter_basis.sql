ALTER TABLE `segmentations` ADD `diameter_source` text;--> statement-breakpoint
ALTER TABLE `segmentations` ADD `diameter_reason` text;