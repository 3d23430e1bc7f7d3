import ReconcileStore

/// The store's schema, as the ordered list of migrations that builds it.
///
/// Times are integer milliseconds since 1970 UTC. An order waits for an attempt exactly when
/// `next_attempt_at` is set (cleared while it is leased), so the partial indexes
/// `orders_due_verify` (pending orders without a purchase token), `orders_due_verify_play` (pending
/// Google Play orders) and `orders_due_deliver` (verified orders) hold only claimable orders, and
/// due-order selection is a range scan whatever the backlog. The `outbox` (version 3) holds the
/// follow-up requests owed after a change (DESIGN §5a), with a partial due index of its own.
///
/// A held order keeps, in `held_resume_state` and `held_reason`, the `resume_state` and `reason`
/// it had when it was held; `release` restores them (so an order escalated during delivery, or as
/// a duplicate, is still that after a hold and a release).
public enum StoreSchema {
    public static let migrations: [Migration] = [
        Migration(
            version: 1, name: "orders, transitions, attempts, claims",
            sql: """
                CREATE TABLE orders (
                    id INTEGER PRIMARY KEY,
                    order_id TEXT NOT NULL UNIQUE,
                    product_id TEXT NOT NULL,
                    state TEXT NOT NULL CHECK (state IN ('waiting', 'pending', 'verifying', 'verified',
                        'finished', 'rejected', 'escalated', 'held', 'cancelled', 'expired')),
                    resume_state TEXT,
                    receipt TEXT,
                    transaction_id TEXT,
                    signed_transaction TEXT,
                    application_username TEXT,
                    user_id TEXT,
                    amount TEXT,
                    currency TEXT,
                    created_at INTEGER,
                    raw BLOB,
                    content_hash TEXT NOT NULL,
                    proof_revision INTEGER NOT NULL DEFAULT 1,
                    received_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    next_attempt_at INTEGER,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    delivery_attempts INTEGER NOT NULL DEFAULT 0,
                    malformed_answers INTEGER NOT NULL DEFAULT 0,
                    lease_owner TEXT,
                    leased_until INTEGER,
                    lease_proof_revision INTEGER,
                    pending_action TEXT,
                    reason TEXT,
                    verified_transaction_id TEXT,
                    original_transaction_id TEXT,
                    verified_product_id TEXT,
                    quantity INTEGER,
                    purchase_date INTEGER,
                    environment TEXT,
                    finished_by TEXT,
                    pruned_at INTEGER
                );
                CREATE INDEX orders_due_verify ON orders(next_attempt_at)
                    WHERE next_attempt_at IS NOT NULL AND state = 'pending';
                CREATE INDEX orders_due_deliver ON orders(next_attempt_at)
                    WHERE next_attempt_at IS NOT NULL AND state = 'verified';
                CREATE INDEX orders_state_received ON orders(state, received_at);
                CREATE INDEX orders_leased ON orders(lease_owner) WHERE lease_owner IS NOT NULL;
                CREATE INDEX orders_prunable ON orders(updated_at)
                    WHERE state IN ('finished', 'cancelled') AND pruned_at IS NULL;

                CREATE TABLE attempts (
                    id INTEGER PRIMARY KEY,
                    order_ref INTEGER NOT NULL REFERENCES orders(id),
                    number INTEGER NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('verify', 'deliver')),
                    started_at INTEGER NOT NULL,
                    endpoint TEXT NOT NULL,
                    environment TEXT,
                    http_status INTEGER,
                    verifier_status INTEGER,
                    latency_ms INTEGER,
                    outcome TEXT NOT NULL,
                    detail TEXT
                );
                CREATE INDEX attempts_order ON attempts(order_ref, id);

                CREATE TABLE transitions (
                    id INTEGER PRIMARY KEY,
                    order_ref INTEGER NOT NULL REFERENCES orders(id),
                    at INTEGER NOT NULL,
                    actor TEXT NOT NULL,
                    from_state TEXT,
                    to_state TEXT NOT NULL,
                    reason TEXT NOT NULL,
                    detail TEXT,
                    attempt_ref INTEGER REFERENCES attempts(id)
                );
                CREATE INDEX transitions_order ON transitions(order_ref, id);

                CREATE TABLE claims (
                    transaction_id TEXT PRIMARY KEY,
                    order_ref INTEGER NOT NULL REFERENCES orders(id),
                    claimed_at INTEGER NOT NULL,
                    actor TEXT NOT NULL
                ) WITHOUT ROWID;
                CREATE INDEX claims_order ON claims(order_ref);
                """),
        Migration(
            version: 2, name: "held orders remember why they were where they were",
            sql: """
                ALTER TABLE orders ADD COLUMN held_resume_state TEXT;
                ALTER TABLE orders ADD COLUMN held_reason TEXT;
                """),
        Migration(
            version: 3, name: "Google Play orders; the outbox of follow-up requests",
            sql: """
                ALTER TABLE orders ADD COLUMN purchase_token TEXT;
                ALTER TABLE orders ADD COLUMN package_name TEXT;
                ALTER TABLE orders ADD COLUMN acknowledgement_state INTEGER;
                ALTER TABLE orders ADD COLUMN consumption_state INTEGER;
                DROP INDEX orders_due_verify;
                CREATE INDEX orders_due_verify ON orders(next_attempt_at)
                    WHERE next_attempt_at IS NOT NULL AND state = 'pending' AND purchase_token IS NULL;
                CREATE INDEX orders_due_verify_play ON orders(next_attempt_at)
                    WHERE next_attempt_at IS NOT NULL AND state = 'pending' AND purchase_token IS NOT NULL;

                CREATE TABLE outbox (
                    id INTEGER PRIMARY KEY,
                    order_ref INTEGER NOT NULL REFERENCES orders(id),
                    kind TEXT NOT NULL,
                    endpoint TEXT NOT NULL,
                    idempotency_key TEXT NOT NULL UNIQUE,
                    payload TEXT NOT NULL,
                    state TEXT NOT NULL CHECK (state IN ('pending', 'done', 'skipped', 'escalated')),
                    attempts INTEGER NOT NULL DEFAULT 0,
                    next_attempt_at INTEGER,
                    lease_owner TEXT,
                    leased_until INTEGER,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    deadline INTEGER,
                    warned_at INTEGER,
                    reason TEXT,
                    detail TEXT
                );
                CREATE INDEX outbox_due ON outbox(endpoint, next_attempt_at)
                    WHERE state = 'pending' AND next_attempt_at IS NOT NULL;
                CREATE INDEX outbox_pending ON outbox(created_at) WHERE state = 'pending';
                CREATE INDEX outbox_order ON outbox(order_ref, id);
                CREATE INDEX outbox_leased ON outbox(lease_owner) WHERE lease_owner IS NOT NULL;
                """),
        // The shared store's table of nodes, version for version with PostgreSQL's. One daemon
        // per SQLite store: it stays empty here (a store copied to PostgreSQL starts with none).
        Migration(
            version: 4, name: "nodes sharing the store, with their heartbeats",
            sql: """
                CREATE TABLE nodes (
                    name TEXT PRIMARY KEY,
                    lease_owner TEXT NOT NULL,
                    started_at INTEGER NOT NULL,
                    last_heartbeat INTEGER NOT NULL,
                    stopped_at INTEGER,
                    in_flight INTEGER NOT NULL DEFAULT 0,
                    circuits TEXT NOT NULL DEFAULT '',
                    version TEXT NOT NULL DEFAULT ''
                );
                """),
        // SQLite cannot change a CHECK constraint in place: the table is rebuilt as its manual
        // says (foreign keys off around the migration, checked before it commits), with every
        // column in its order and every index of `orders` made again.
        Migration(
            version: 5, name: "revoked orders (the store took the money back)", rebuildsTables: true,
            sql: """
                CREATE TABLE orders_v5 (
                    id INTEGER PRIMARY KEY,
                    order_id TEXT NOT NULL UNIQUE,
                    product_id TEXT NOT NULL,
                    state TEXT NOT NULL CHECK (state IN ('waiting', 'pending', 'verifying', 'verified',
                        'finished', 'rejected', 'escalated', 'held', 'cancelled', 'expired', 'revoked')),
                    resume_state TEXT,
                    receipt TEXT,
                    transaction_id TEXT,
                    signed_transaction TEXT,
                    application_username TEXT,
                    user_id TEXT,
                    amount TEXT,
                    currency TEXT,
                    created_at INTEGER,
                    raw BLOB,
                    content_hash TEXT NOT NULL,
                    proof_revision INTEGER NOT NULL DEFAULT 1,
                    received_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    next_attempt_at INTEGER,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    delivery_attempts INTEGER NOT NULL DEFAULT 0,
                    malformed_answers INTEGER NOT NULL DEFAULT 0,
                    lease_owner TEXT,
                    leased_until INTEGER,
                    lease_proof_revision INTEGER,
                    pending_action TEXT,
                    reason TEXT,
                    verified_transaction_id TEXT,
                    original_transaction_id TEXT,
                    verified_product_id TEXT,
                    quantity INTEGER,
                    purchase_date INTEGER,
                    environment TEXT,
                    finished_by TEXT,
                    pruned_at INTEGER,
                    held_resume_state TEXT,
                    held_reason TEXT,
                    purchase_token TEXT,
                    package_name TEXT,
                    acknowledgement_state INTEGER,
                    consumption_state INTEGER
                );
                INSERT INTO orders_v5 SELECT * FROM orders;
                DROP TABLE orders;
                ALTER TABLE orders_v5 RENAME TO orders;
                CREATE INDEX orders_due_verify ON orders(next_attempt_at)
                    WHERE next_attempt_at IS NOT NULL AND state = 'pending' AND purchase_token IS NULL;
                CREATE INDEX orders_due_verify_play ON orders(next_attempt_at)
                    WHERE next_attempt_at IS NOT NULL AND state = 'pending' AND purchase_token IS NOT NULL;
                CREATE INDEX orders_due_deliver ON orders(next_attempt_at)
                    WHERE next_attempt_at IS NOT NULL AND state = 'verified';
                CREATE INDEX orders_state_received ON orders(state, received_at);
                CREATE INDEX orders_leased ON orders(lease_owner) WHERE lease_owner IS NOT NULL;
                CREATE INDEX orders_prunable ON orders(updated_at)
                    WHERE state IN ('finished', 'cancelled') AND pruned_at IS NULL;
                """),
        Migration(
            version: 6, name: "store notifications (refunds, revocations)",
            sql: """
                CREATE TABLE notifications (
                    id INTEGER PRIMARY KEY,
                    source TEXT NOT NULL,
                    notification_id TEXT NOT NULL,
                    type TEXT NOT NULL,
                    subtype TEXT,
                    transaction_id TEXT,
                    original_transaction_id TEXT,
                    product_id TEXT,
                    environment TEXT,
                    signed_at INTEGER,
                    revoked_at INTEGER,
                    revocation_reason INTEGER,
                    via TEXT NOT NULL,
                    received_at INTEGER NOT NULL,
                    order_ref INTEGER REFERENCES orders(id),
                    outcome TEXT NOT NULL,
                    applied_at INTEGER,
                    UNIQUE (source, notification_id)
                );
                CREATE INDEX notifications_order ON notifications(order_ref, id);
                CREATE INDEX notifications_waiting ON notifications(received_at) WHERE outcome = 'waiting';
                CREATE INDEX notifications_unmatched ON notifications(received_at) WHERE outcome = 'unmatched';
                CREATE INDEX notifications_received ON notifications(received_at);
                CREATE INDEX orders_transaction ON orders(transaction_id) WHERE transaction_id IS NOT NULL;
                """),
        // Where the daemon's polling of a store got to (DESIGN §5a), one row per source.
        Migration(
            version: 7, name: "checkpoints of notification polling",
            sql: """
                CREATE TABLE checkpoints (
                    name TEXT PRIMARY KEY,
                    value INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                );
                """),
        // Google Play refunds: a voided purchase finds an order not verified yet (no claim) by its
        // token; voided purchases are read for each package orders name.
        Migration(
            version: 8, name: "orders by purchase token and package (Google Play refunds)",
            sql: """
                CREATE INDEX orders_purchase_token ON orders(purchase_token) WHERE purchase_token IS NOT NULL;
                CREATE INDEX orders_package ON orders(package_name) WHERE package_name IS NOT NULL;
                """),
        // The latest store event about a transaction decides, and a refund that came before its
        // order is applied when the order takes the transaction: notifications by the
        // transaction they are matched by (``NotificationColumns/matchKey``).
        Migration(
            version: 9, name: "notifications by transaction (store event order, early refunds)",
            sql: """
                CREATE INDEX notifications_transaction ON notifications(coalesce(transaction_id, original_transaction_id), signed_at);
                """),
        // Narrow hot rows: what never changes after ingest but for new proof (the receipt, the
        // signed transaction, the spool file) moves out of `orders`, whose rows every claim and
        // outcome rewrites. The old columns stay, always NULL (dropping them would rebuild the
        // table for nothing). One transaction: a crash leaves version 9 whole or 10 complete.
        Migration(
            version: 10, name: "order proofs apart from the rows each attempt rewrites",
            sql: """
                CREATE TABLE order_proofs (
                    order_ref INTEGER PRIMARY KEY REFERENCES orders(id),
                    receipt TEXT,
                    signed_transaction TEXT,
                    raw BLOB
                );
                INSERT INTO order_proofs (order_ref, receipt, signed_transaction, raw)
                    SELECT id, receipt, signed_transaction, raw FROM orders;
                UPDATE orders SET receipt = NULL, signed_transaction = NULL, raw = NULL
                    WHERE receipt IS NOT NULL OR signed_transaction IS NOT NULL OR raw IS NOT NULL;
                """),
        // Purchases the stores reported that no phone order may ever bring (DESIGN §5b), each
        // once by its transaction key (the key claims use), with its proof, where it stands
        // (``DiscoveredPurchaseColumns``) and the order that holds it; and who made an order
        // (`origin`: NULL for the phone's spool file, `store`, `operator`).
        Migration(
            version: 11, name: "purchases the phone never sent",
            sql: """
                CREATE TABLE discovered_purchases (
                    id INTEGER PRIMARY KEY,
                    store TEXT NOT NULL,
                    transaction_key TEXT NOT NULL UNIQUE,
                    product_id TEXT NOT NULL,
                    purchased_at INTEGER,
                    environment TEXT,
                    account_token TEXT,
                    profile_id TEXT,
                    signed_transaction TEXT,
                    purchase_token TEXT,
                    package_name TEXT,
                    is_subscription INTEGER NOT NULL,
                    revoked_at INTEGER,
                    via TEXT NOT NULL,
                    discovered_at INTEGER NOT NULL,
                    status TEXT NOT NULL,
                    grace_until INTEGER,
                    order_ref INTEGER REFERENCES orders(id),
                    updated_at INTEGER NOT NULL
                );
                CREATE INDEX discovered_waiting ON discovered_purchases(grace_until) WHERE status = 'waiting';
                CREATE INDEX discovered_order ON discovered_purchases(order_ref) WHERE order_ref IS NOT NULL;
                ALTER TABLE orders ADD COLUMN origin TEXT;
                """),
        // The purchases a person must decide on (`no_account`, DESIGN §5b), counted by `status`
        // and the metrics without reading the whole table: a store reports every purchase, most
        // of them joined to the phone's order.
        Migration(
            version: 12, name: "discovered purchases left for a person",
            sql: """
                CREATE INDEX discovered_no_account ON discovered_purchases (discovered_at) WHERE status = 'no_account';
                """),
        // `show` on an order a discovered purchase became names the phone's order that came late
        // for the same purchase (DESIGN §5b): found by the late order's own transition, whose
        // detail names the made order; few rows, so a partial index.
        Migration(
            version: 13, name: "late phone orders by the order they deferred to",
            sql: """
                CREATE INDEX transitions_same_purchase ON transitions (detail) WHERE reason = 'same_purchase_as';
                """),
    ]

    /// The newest schema version this build knows.
    public static var latestVersion: Int { migrations.last?.version ?? 0 }
}
