-- cpsam version 2: the version-1 weights trained 500 steps more with every training image drawn
-- equally often (gpu-runner/models/cpsam/README.md). A new prefix, so runners' caches, keyed by
-- version, fetch the new weights; `npm start` and `npm run admin -- base-model upload` put them there.
UPDATE models SET version = '2', r2_prefix = 'models/cpsam/2/' WHERE id = 'cpsam';
