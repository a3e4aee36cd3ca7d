-- 0017: reserved for the migration of the `reader` branch, so that this branch's 0018 applies without a
-- gap on its own; drop this file when the two branches merge (it changes nothing).
SELECT 1;
