ALTER TABLE `images` ADD `format_name` text;--> statement-breakpoint
ALTER TABLE `images` ADD `levels` text;--> statement-breakpoint
ALTER TABLE `images` ADD `objective_magnification` real;