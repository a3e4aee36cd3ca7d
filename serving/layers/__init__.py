"""ATT&CK Navigator layers read as technique sets (checked against the store's ATT&CK), their algebra (minus,
union, intersect) and the layer of a comparison."""
