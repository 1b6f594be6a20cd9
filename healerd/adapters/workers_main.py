"""`python -P -m healerd.adapters.workers_main JOB_FD RESULT_FD [THREADS]`: an extraction
worker process (started by `healerd.adapters.workers.WorkerPool`).

httpx imports its command-line tool's libraries (click, rich, pygments) whenever they happen to be
installed; a worker never uses them, and they cost ~5 MB of memory in every worker, so they
are kept out before anything imports httpx.

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

for _name in ("rich", "pygments", "click"):
    sys.modules.setdefault(_name, None)  # type: ignore[arg-type]

from healerd.adapters.workers import main  # noqa: E402  (after the lines above, on purpose)

main(sys.argv)
