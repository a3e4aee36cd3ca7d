"""secrag's SQL, installed as the package `secrag.sql`: migrations, named queries and schema.sql."""
