-- Keyword search at scale: the terms of a bank that too many of its memories contain to rank by (the keyword
-- arm leaves out a term matched by TERM_SCAN_CAP memories or more). Knowing them beforehand saves reading up to
-- that many rows per common term on every recall. Counted with ts_stat as the bank grows
-- (memwrap/engine/recall/common_terms.py); a term missing here is simply read and counted as before.
CREATE TABLE bank_common_terms (
    bank_id text    NOT NULL REFERENCES banks(bank_id) ON DELETE CASCADE,
    lexeme  text    NOT NULL,
    df      integer NOT NULL,  -- memories of the bank containing it, when counted
    PRIMARY KEY (bank_id, lexeme)
);

-- The bank's memory_count when its common terms were last counted (NULL: never).
ALTER TABLE banks ADD COLUMN common_terms_at integer;
