ALTER TABLE `images` ADD `sha256` text;--> statement-breakpoint
CREATE INDEX `images_org_sha256` ON `images` (`org_id`,`sha256`);