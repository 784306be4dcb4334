-- The public models' descriptions are their manifests' now (schema/public-model-descriptions.ts,
-- written by `npm run models:describe`), and hold no figures: accuracy and speed are dated in
-- docs/models.md alone. The figures migrations 0013, 0017 and 0018 wrote into these rows go.
UPDATE models SET description = NULL WHERE org_id IS NULL;
