ALTER TABLE `images` ADD `pixel_size_warning` text;--> statement-breakpoint
-- Sizes read before calibrations were checked (schema/image-formats/calibration.ts): one outside the
-- 0.01-50 µm microscopes produce (every screen or print default is: 300 dpi is 84.7 µm, 96 dpi 264.6)
-- is set aside with the warning the upload probe now gives, and so is its segmentations' copy, so no
-- µm column is computed from it. A prediction's given size stays.
UPDATE `images` SET
  `pixel_size_warning` = printf(
    'The file''s pixel size, %s µm (%s), is outside the 0.01-50 µm that microscopes produce',
    CASE WHEN `pixel_size_x_um` = `pixel_size_y_um` THEN printf('%g', `pixel_size_x_um`) ELSE printf('%g × %g', `pixel_size_x_um`, `pixel_size_y_um`) END,
    CASE `pixel_size_source` WHEN 'ome' THEN 'OME-XML' WHEN 'imagej' THEN 'ImageJ''s calibration' ELSE 'the TIFF resolution tags' END
  ),
  `pixel_size_x_um` = NULL, `pixel_size_y_um` = NULL, `pixel_size_source` = NULL
  WHERE `pixel_size_source` IS NOT NULL
    AND (`pixel_size_x_um` < 0.01 OR `pixel_size_x_um` > 50 OR `pixel_size_y_um` < 0.01 OR `pixel_size_y_um` > 50);--> statement-breakpoint
UPDATE `segmentations` SET `pixel_size_x_um` = NULL, `pixel_size_y_um` = NULL, `pixel_size_source` = NULL
  WHERE `pixel_size_source` IS NOT NULL AND `pixel_size_source` <> 'given'
    AND (`pixel_size_x_um` < 0.01 OR `pixel_size_x_um` > 50 OR `pixel_size_y_um` < 0.01 OR `pixel_size_y_um` > 50);
