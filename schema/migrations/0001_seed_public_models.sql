-- The public base model. Its weights live in R2 under r2_prefix (model.onnx + model.json);
-- gpu-runner/models/cpsam/ holds the committed copy that `npm start` and deploys upload.
INSERT INTO models (id, org_id, name, version, description, r2_prefix)
VALUES ('cpsam', NULL, 'cpsam', '1',
        'Cellpose-style flow network trained by this project on CC0 nuclei data (the name is kept for API compatibility)',
        'models/cpsam/1/');
