ALTER TABLE `segmentations` ADD `modality` text;--> statement-breakpoint
ALTER TABLE `segmentations` ADD `modality_source` text;