"""`python -P -m healerd.adapters.workers_main JOB_FD RESULT_FD [THREADS]`: an extraction
worker process (started by `healerd.adapters.workers.WorkerPool`).

Before anything else, the worker keeps glibc's malloc to one arena and imports httpx without its
command-line tool's libraries (`healerd.adapters.lean_process`, which gives the figures).

A worker runs at a lower CPU priority than the daemon (nice +WORKER_NICENESS): when both
want the machine's cores, the daemon's own work — scheduling, validating and committing
what the workers send back, answering `healerctl` — goes first, and the workers take
the rest.
"""

import os
import sys

WORKER_NICENESS = 5

try:
    os.nice(WORKER_NICENESS)
except OSError:   # a system that refuses it: run at the daemon's priority
    pass

from healerd.adapters.lean_process import import_httpx, limit_malloc_arenas  # noqa: E402

limit_malloc_arenas()   # before the worker's threads start
import_httpx()          # before anything else imports it

from healerd.adapters.worker_protocol import main  # noqa: E402  (after the lines above, on purpose)

main(sys.argv)
