-- bank_common_terms now lists every term in FREQUENT_TERM_DF or more of a bank's memories (it listed those over
-- TERM_SCAN_CAP), from COUNT_FROM memories on (memwrap/engine/recall/common_terms.py): count every bank again at its
-- next recall. Until then the old lists serve as before.
UPDATE banks SET common_terms_at = NULL WHERE common_terms_at IS NOT NULL;
