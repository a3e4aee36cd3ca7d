"""The database: connections, the embedded PostgreSQL server, migrations, named SQL, the reader's grants."""
