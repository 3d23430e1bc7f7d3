#ifndef RECONCILE_CSYSTEMD_SHIM_H
#define RECONCILE_CSYSTEMD_SHIM_H

#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>

#endif
