-- 0012: tuned values live in the store, so every API worker and pod reads an approved change within
-- seconds, without a restart (serving/tuned_plans.py); `secrag tune apply|rollback` writes them with an
-- audit entry in one transaction (secrag_cli/tuning_audit.py).

-- The value in force per setting and query type (a row overrides the plans file; no row: the file's).
CREATE TABLE tuned_value (
    setting    text NOT NULL CHECK (setting IN ('score_threshold')),
    query_type text NOT NULL,
    value      double precision NOT NULL,
    changed_at timestamptz NOT NULL DEFAULT now(),
    audit_id   bigint NOT NULL,
    PRIMARY KEY (setting, query_type)
);

-- Who changed what, when, from which value to which, and why; the newest entries are kept (the plans
-- file's tuning.history, at least 100) and older ones are written to the log before they are dropped.
CREATE TABLE tuning_audit (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    who         text NOT NULL,
    action      text NOT NULL CHECK (action IN ('apply', 'rollback')),
    setting     text NOT NULL,
    query_type  text NOT NULL,
    old         double precision NOT NULL,
    old_tuned   boolean NOT NULL,          -- false: `old` was the plans file's value (no tuned row)
    new         double precision NOT NULL,
    new_tuned   boolean NOT NULL,          -- false: the change removed the tuned row (back to the file)
    reason      text NOT NULL CHECK (btrim(reason) <> ''),
    rolls_back  bigint                     -- the entry a rollback restored the state before
);

-- The reader serves tuned values (SELECT on new tables is a default privilege, 0001); who tuned what
-- is the owner's business.
REVOKE SELECT ON tuning_audit FROM secrag_reader;
