-- The second public model, cpsam-large (gpu-runner/models/cpsam-large/: a colour network with 4.7x
-- cpsam's weights, trained from it), and both public models' descriptions saying the trade-off per
-- modality: AP@0.5 on the report part of the held-out images (chosen nothing, scored with each
-- model's mask defaults) and the network's time per megapixel on the 2-core CPU
-- (npm run bench:engine -- --model cpsam-large), measured 2026-11-26. `npm start` and
-- `npm run admin -- models upload` put the weights under the row's prefix.
UPDATE models SET description =
  'The fast default: a Cellpose-style flow network trained by this project on CC0 nuclei data (the name is kept for API compatibility). '
  || 'AP@0.5 on held-out images: fluorescence BBBC039 0.893, Kromp 0.955, DSB2018 0.834; brightfield 0.755; stained histology 0.593. '
  || 'Network 0.25 s/MP on 2 CPU cores.'
WHERE id = 'cpsam' AND org_id IS NULL;
--> statement-breakpoint
INSERT INTO models (id, org_id, name, version, description, r2_prefix)
VALUES ('cpsam-large', NULL, 'cpsam-large', '1',
        'For stained histology and brightfield: a colour network with 4.7x cpsam''s weights, trained from it by this project on the same data. '
        || 'AP@0.5 on held-out images: stained histology 0.620 (cpsam 0.593), brightfield 0.835 (0.755); '
        || 'fluorescence BBBC039 0.892 (0.893), Kromp 0.918 (0.955), DSB2018 0.830 (0.834): there cpsam is as good or better, and faster. '
        || 'Network 1.16 s/MP on 2 CPU cores, 4.7x cpsam.',
        'models/cpsam-large/1/');
