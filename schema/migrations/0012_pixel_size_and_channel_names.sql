ALTER TABLE `images` ADD `pixel_size_x_um` real;--> statement-breakpoint
ALTER TABLE `images` ADD `pixel_size_y_um` real;--> statement-breakpoint
ALTER TABLE `images` ADD `pixel_size_source` text;--> statement-breakpoint
ALTER TABLE `images` ADD `channel_names` text;--> statement-breakpoint
ALTER TABLE `segmentations` ADD `pixel_size_x_um` real;--> statement-breakpoint
ALTER TABLE `segmentations` ADD `pixel_size_y_um` real;--> statement-breakpoint
ALTER TABLE `segmentations` ADD `pixel_size_source` text;