-- memwrap schema v10: an item's identity (item_hash) can no longer undo the memory defense.
--
-- Until now item_hash was an unkeyed SHA-256 of the item as written, secrets included, and export carried it:
-- a redacted card number, ID number, phone or short password could be found again by hashing guesses. From now
-- on retain hashes the item after the memory defense (engine/retain/prepare.py: item_hash), so the hash says
-- no more than what is stored. The hashes already stored are rewritten here as HMAC-SHA256 under a random key
-- of this store (store_meta 'legacy_item_hash_key'), which never leaves the database (not exported); retain and
-- import_memories compute that keyed hash too (prepare.legacy_item_hash), so an item retained before this
-- version is still found when it is retained again. A store without such rows gets no key.
--
-- Rewritten everywhere an item hash is kept: memory_units, retained_items, the evidence source keys of
-- observations ('item:<hash>') and the item lists of queued jobs. Observation units ('observation:<id>') are not
-- item hashes and stay. HMAC is written out with the core sha256() (pgcrypto is not always installed).
DO $$
DECLARE
    secret bytea;
    block bytea;
    inner_pad bytea;
    outer_pad bytea;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM memory_units WHERE item_hash ~ '^[0-9a-f]{64}$')
       AND NOT EXISTS (SELECT 1 FROM retained_items WHERE item_hash ~ '^[0-9a-f]{64}$') THEN
        RETURN;
    END IF;
    -- 4 x 122 random bits (gen_random_uuid draws from the server's strong random source), hashed to 32 bytes.
    secret := sha256(decode(replace(gen_random_uuid()::text || gen_random_uuid()::text
                                    || gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));
    block := secret || decode(repeat('00', 32), 'hex');  -- the key padded to SHA-256's 64-byte block
    inner_pad := block;
    outer_pad := block;
    FOR i IN 0..63 LOOP
        inner_pad := set_byte(inner_pad, i, get_byte(block, i) # 54);  -- 0x36
        outer_pad := set_byte(outer_pad, i, get_byte(block, i) # 92);  -- 0x5c
    END LOOP;
    INSERT INTO store_meta (key, value) VALUES ('legacy_item_hash_key', encode(secret, 'hex'));

    UPDATE memory_units
    SET item_hash = encode(sha256(outer_pad || sha256(inner_pad || convert_to(item_hash, 'UTF8'))), 'hex')
    WHERE item_hash ~ '^[0-9a-f]{64}$';

    UPDATE retained_items
    SET item_hash = encode(sha256(outer_pad || sha256(inner_pad || convert_to(item_hash, 'UTF8'))), 'hex')
    WHERE item_hash ~ '^[0-9a-f]{64}$';

    UPDATE observation_evidence
    SET source_key = 'item:' || encode(sha256(outer_pad || sha256(inner_pad
                                       || convert_to(substr(source_key, 6), 'UTF8'))), 'hex')
    WHERE source_key ~ '^item:[0-9a-f]{64}$';

    UPDATE jobs
    SET payload = jsonb_set(payload, '{item_hashes}', (
        SELECT coalesce(jsonb_agg(
                   CASE WHEN h ~ '^[0-9a-f]{64}$'
                        THEN encode(sha256(outer_pad || sha256(inner_pad || convert_to(h, 'UTF8'))), 'hex')
                        ELSE h END ORDER BY n), '[]'::jsonb)
        FROM jsonb_array_elements_text(payload -> 'item_hashes') WITH ORDINALITY AS t(h, n)))
    WHERE jsonb_typeof(payload -> 'item_hashes') = 'array';
END
$$;
