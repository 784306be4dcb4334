-- The public histology figures after "auto" diameter's first pass on stained histology was kept
-- from enlarging the image more than 4/3 (gpu-runner/engine/diameter-guess.ts,
-- HISTOLOGY_FIRST_PASS_FLOOR, chosen on the selection part). AP@0.5 on the report part of
-- cpsam-histology's training record (chose nothing: TNBC slides 07 and 08, dsb2018's stained
-- histology), each model as served, measured 2026-11-26 with
-- `npm run eval -- --data <set> --model gpu-runner/models/<id>/<id>.onnx --report training-runs/cpsam-histology/run/training-record.json`.
UPDATE models SET description =
  'For stained histology (H&E and the like): cpsam''s network reading colour, trained by this project on dsb2018''s stained images and on TNBC''s H&E (CC BY 4.0, Naylor et al. 2018). '
  || 'AP@0.5 on held-out images: TNBC slides it never trained on 0.706 (cpsam 0.419, cpsam-large 0.453), DSB2018 stained histology 0.632 (0.589, 0.621). '
  || 'Network 1.2x cpsam''s time on 2 CPU cores.'
WHERE id = 'cpsam-histology' AND org_id IS NULL;
--> statement-breakpoint
UPDATE models SET description =
  'For brightfield: a colour network with 4.7x cpsam''s weights, trained from it by this project on the same data. '
  || 'AP@0.5 on held-out images: brightfield 0.835 (cpsam 0.755), stained histology 0.621 (cpsam-histology 0.632 is better and 4x faster); '
  || 'fluorescence BBBC039 0.892 (0.893), Kromp 0.918 (0.955), DSB2018 0.830 (0.834): there cpsam is as good or better, and faster. '
  || 'Network 1.16 s/MP on 2 CPU cores, 4.7x cpsam.'
WHERE id = 'cpsam-large' AND org_id IS NULL;
