"""The encoder secrag trains on its own labelled knowledge (ATT&CK's procedure examples and technique texts)."""
