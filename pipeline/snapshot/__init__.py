"""Store snapshots: the public part of a store (sources, documents, chunks, the active model's vectors, the
technique lookup) as one file, exported with binary COPY and imported, verified, in one transaction."""
