ALTER TABLE `jobs` ADD `time_limit_seconds` integer;--> statement-breakpoint
-- Jobs queued or running when the limits came: a training keeps its plan's bound plus 10 minutes for
-- fetching and uploading (as before); the others get the longest limit (schema/work-limits.ts: 4 h).
UPDATE `jobs` SET `time_limit_seconds` = json_extract(`input`, '$.max_seconds') + 600
  WHERE `kind` = 'training' AND json_extract(`input`, '$.max_seconds') IS NOT NULL AND `status` IN ('SUBMITTED', 'STARTED');--> statement-breakpoint
UPDATE `jobs` SET `time_limit_seconds` = 14400
  WHERE `kind` IN ('prediction', 'preview', 'measurement') AND `status` IN ('SUBMITTED', 'STARTED');
