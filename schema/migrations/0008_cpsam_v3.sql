-- cpsam version 3: one model for fluorescence, brightfield and stained histology nuclei, trained
-- on bbbc039, kromp and dsb2018-train, with mask defaults for fluorescence in its manifest
-- (gpu-runner/models/cpsam/README.md). A new prefix, so runners' caches, keyed by version, fetch
-- the new weights; `npm start` and `npm run admin -- base-model upload` put them there.
UPDATE models SET version = '3', r2_prefix = 'models/cpsam/3/' WHERE id = 'cpsam';
