-- The third public model, cpsam-histology (gpu-runner/models/cpsam-histology/: cpsam's network
-- reading colour, fine-tuned on dsb2018's stained images and TNBC's H&E slides, with mask defaults
-- for histology), and cpsam-large's description no longer claiming stained histology, where
-- cpsam-histology is better and 4x faster. AP@0.5 on the report part of the held-out images (chose
-- nothing; TNBC slides 07 and 08, never trained on, and dsb2018's stained histology), scored with
-- each model's mask defaults; the network's time against cpsam's in the same run on the 2-core CPU
-- (npm run bench:engine -- --model cpsam-histology), measured 2026-11-26. `npm start` and
-- `npm run admin -- models upload` put the weights under the row's prefix.
INSERT INTO models (id, org_id, name, version, description, r2_prefix)
VALUES ('cpsam-histology', NULL, 'cpsam-histology', '1',
        'For stained histology (H&E and the like): cpsam''s network reading colour, trained by this project on dsb2018''s stained images and on TNBC''s H&E (CC BY 4.0, Naylor et al. 2018). '
        || 'AP@0.5 on held-out images: TNBC slides it never trained on 0.666 (cpsam 0.343, cpsam-large 0.415), DSB2018 stained histology 0.624 (0.593, 0.620). '
        || 'Network 1.2x cpsam''s time on 2 CPU cores.',
        'models/cpsam-histology/1/');
--> statement-breakpoint
UPDATE models SET description =
  'For brightfield: a colour network with 4.7x cpsam''s weights, trained from it by this project on the same data. '
  || 'AP@0.5 on held-out images: brightfield 0.835 (cpsam 0.755), stained histology 0.620 (cpsam-histology 0.624 is better and 4x faster); '
  || 'fluorescence BBBC039 0.892 (0.893), Kromp 0.918 (0.955), DSB2018 0.830 (0.834): there cpsam is as good or better, and faster. '
  || 'Network 1.16 s/MP on 2 CPU cores, 4.7x cpsam.'
WHERE id = 'cpsam-large' AND org_id IS NULL;
