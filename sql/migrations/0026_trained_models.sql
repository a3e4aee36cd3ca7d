-- 0026: the encoders the pipeline trains on ATT&CK's procedure examples (pipeline/training), one row per trained
-- model: what it was made from, how it scored against the model it was compared with, and whether it serves
-- the sentence path. `secrag models promote` makes one row 'promoted' (the one before it 'retired') once its
-- vectors cover the ATT&CK chunks; `secrag models rollback` gives the sentence path back to the one promoted
-- before it, or to the general model. The API reads served_model of the promoted row.
CREATE TABLE trained_models (
    model_id       text PRIMARY KEY,  -- the fp32 trained model (a registry id: <models dir>/trained/<model_id>/)
    served_model   text NOT NULL,     -- the id whose vectors serve, normally <model_id>-int8
    base_model     text NOT NULL,
    replaces       text,              -- the served model it was compared with; NULL: the general model
    attack_version text,
    data_digest    text NOT NULL,
    recipe         jsonb NOT NULL,
    validation     jsonb NOT NULL,
    baseline       jsonb NOT NULL,
    passed         boolean NOT NULL,  -- its quality gate
    status         text NOT NULL CHECK (status IN ('candidate', 'promoted', 'retired', 'rejected')),
    trained_at     timestamptz NOT NULL DEFAULT now(),
    promoted_at    timestamptz,       -- when it last became the promoted one; NULL once rolled back
    train_seconds  double precision,
    CONSTRAINT trained_models_promoted_at CHECK (status <> 'promoted' OR promoted_at IS NOT NULL)
);

-- At most one trained model serves the sentence path.
CREATE UNIQUE INDEX trained_models_one_promoted ON trained_models ((true)) WHERE status = 'promoted';
