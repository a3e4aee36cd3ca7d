-- 0027: the technique lookup holds the techniques of ATT&CK's three domains (Enterprise, Mobile, ICS), each with
-- its domain, spelled as x_mitre_domains without its "-attack" suffix. Technique ids are unique across the
-- domains, so the id stays the key; the rows written before this migration are Enterprise's.
ALTER TABLE mitre_techniques
    ADD COLUMN domain text NOT NULL DEFAULT 'enterprise'
        CONSTRAINT mitre_techniques_domain_check CHECK (domain IN ('enterprise', 'mobile', 'ics'));
