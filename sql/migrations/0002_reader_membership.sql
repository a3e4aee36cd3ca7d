-- 0002: the API connects as the migrating user and drops to secrag_reader with SET ROLE.
-- Superusers may always do that; on PostgreSQL 16+ a CREATEROLE user that created the role holds
-- it without the SET option, so grant membership explicitly. A user who cannot is warned, not failed:
-- an administrator can run `GRANT secrag_reader TO <api user>` instead.
DO $$
BEGIN
    IF NOT pg_has_role(current_user, 'secrag_reader', 'USAGE') THEN
        EXECUTE format('GRANT secrag_reader TO %I', current_user);
    END IF;
EXCEPTION WHEN insufficient_privilege OR invalid_grant_operation THEN
    RAISE WARNING 'cannot grant secrag_reader to %; run GRANT secrag_reader TO % as an administrator',
        current_user, current_user;
END
$$;
