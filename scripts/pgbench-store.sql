-- One scheduler turn of the `store` scenario, as PostgreSQL's own limit (issue 24): in one
-- transaction, finish the orders this client leased in its last turn (each: an attempts row, a
-- claims row, a transitions row) and lease the next :batch due orders through the
-- orders_due_verify partial index (each: a transitions row), reading what the verifier needs.
-- Multi-row statements, two round trips plus BEGIN and END. The ids a turn leased come back to
-- pgbench (\gset, with the receipts) and are finished by id in the client's next turn, as the
-- daemon does (finishing by lease owner instead walks the dead index entries every earlier turn
-- left behind, and slows down turn by turn).
--
--   pgbench -n -M prepared -f scripts/pgbench-store.sql -c 1 -t <turns> -D held=0 \
--       -D now=<epoch ms> -D batch=64 -h <socket dir> -p <port> -U reconcile <database>
--
-- against a database with the store's schema and due orders (`reconcile-bench store-limit`
-- makes both on the tests' throw-away server). Orders/s = tps x batch.
BEGIN;
WITH finished AS (
    UPDATE orders SET state = 'finished', lease_owner = NULL, leased_until = NULL, lease_proof_revision = NULL,
        updated_at = :now::bigint, verified_transaction_id = 'T-' || order_id, verified_product_id = product_id,
        finished_by = 'merchant'
    -- The ids pick the rows (the primary key), as the daemon's lookups by id do; the lease and
    -- state checks are IS NOT DISTINCT FROM so that the planner cannot prefer the (state,
    -- received_at) or lease-owner index, whose dead entries grow with every turn.
    WHERE id = ANY (string_to_array(:held, ',')::bigint[])
        AND lease_owner IS NOT DISTINCT FROM 'pgbench-' || :client_id AND state IS NOT DISTINCT FROM 'verifying'
    RETURNING id, order_id, attempts
), attempt AS (
    INSERT INTO attempts (order_ref, number, kind, started_at, endpoint, http_status, latency_ms, outcome)
    SELECT id, attempts, 'verify', :now::bigint - 1, 'merchant', 200, 1, 'answered' FROM finished
    RETURNING id, order_ref
), claim AS (
    INSERT INTO claims (transaction_id, order_ref, claimed_at, actor)
    SELECT 'T-' || order_id, id, :now::bigint, 'daemon' FROM finished
    ON CONFLICT DO NOTHING
)
INSERT INTO transitions (order_ref, at, actor, from_state, to_state, reason, attempt_ref)
SELECT order_ref, :now::bigint, 'daemon', 'verifying', 'finished', 'verified', id FROM attempt;
WITH due AS (
    SELECT id FROM orders
    WHERE next_attempt_at IS NOT NULL AND next_attempt_at <= :now::bigint AND state = 'pending' AND purchase_token IS NULL
    ORDER BY next_attempt_at
    LIMIT :batch::bigint
    FOR UPDATE SKIP LOCKED
), leased AS (
    UPDATE orders AS o SET state = 'verifying', lease_owner = 'pgbench-' || :client_id, leased_until = :now::bigint + 120000,
        lease_proof_revision = o.proof_revision, next_attempt_at = NULL, attempts = o.attempts + 1, updated_at = :now::bigint
    FROM due WHERE o.id = due.id
    RETURNING o.id, o.order_id, o.product_id, o.receipt, o.attempts
), transition AS (
    INSERT INTO transitions (order_ref, at, actor, from_state, to_state, reason, detail)
    SELECT id, :now::bigint, 'daemon', 'pending', 'verifying', 'attempt', 'attempt ' || attempts FROM leased
)
SELECT coalesce(string_agg(id::text, ','), '0') AS held, string_agg(order_id || ' ' || product_id || ' ' || receipt, E'\n') AS handed
FROM leased \gset
END;
