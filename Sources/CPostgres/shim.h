#ifndef RECONCILE_CPOSTGRES_SHIM_H
#define RECONCILE_CPOSTGRES_SHIM_H

// libpq, PostgreSQL's C client library (Debian: libpq-dev), for the shared store.

#include <libpq-fe.h>

// The PG_DIAG_* field codes are character-literal macros, which Swift does not import.
static inline int reconcile_pq_diag_sqlstate(void) { return PG_DIAG_SQLSTATE; }
static inline int reconcile_pq_diag_message_primary(void) { return PG_DIAG_MESSAGE_PRIMARY; }
static inline int reconcile_pq_diag_constraint_name(void) { return PG_DIAG_CONSTRAINT_NAME; }

/// Discards the server's notices ("relation already exists, skipping"), which libpq would
/// otherwise print on standard error.
static inline void reconcile_pq_ignore_notice(void *argument, const char *message) {
    (void)argument;
    (void)message;
}

static inline void reconcile_pq_silence_notices(PGconn *connection) {
    PQsetNoticeProcessor(connection, reconcile_pq_ignore_notice, (void *)0);
}

#endif
