#ifndef RECONCILE_CSQLITE_SHIM_H
#define RECONCILE_CSQLITE_SHIM_H

#include <sqlite3.h>

/// SQLITE_TRANSIENT is a macro around a cast Swift cannot import.
static inline sqlite3_destructor_type reconcile_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

/// sqlite3_db_config is variadic; these wrappers fix the argument lists.
static inline int reconcile_sqlite_disable_dqs(sqlite3 *db) {
    int rc = sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DDL, 0, (void *)0);
    if (rc != SQLITE_OK) return rc;
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DML, 0, (void *)0);
}

static inline int reconcile_sqlite_enable_defensive(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (void *)0);
}

/// Closing the last connection then leaves the write-ahead log as it is instead of copying it
/// into the database file (which another process has overwritten).
static inline int reconcile_sqlite_no_checkpoint_on_close(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (void *)0);
}

#endif
