-- cpsam version 3.1: version 3's weights with mask defaults chosen again on the training images
-- (fluorescence: objects under 30 px at the network's scale removed; histology: no flow-error
-- check, the same minimum size; gpu-runner/models/cpsam/README.md). The defaults live in the
-- manifest, so a new prefix: runners' caches, keyed by version, fetch the new manifest; `npm start`
-- and `npm run admin -- base-model upload` put the files there.
UPDATE models SET version = '3.1', r2_prefix = 'models/cpsam/3.1/' WHERE id = 'cpsam';
