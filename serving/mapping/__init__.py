"""Mapping a whole text to ATT&CK: its sentences with their offsets, one search per sentence, the evidence
of each technique across sentences, citations and the Navigator layer."""
