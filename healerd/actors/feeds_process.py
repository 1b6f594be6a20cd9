"""`python -P -m healerd.actors.feeds_process`: the feeds process (started by
`healerd.actors.feeds.FeedDispatcher`), which delivers stored scrapes to the feeds.

Like an extraction worker it runs at a lower CPU priority than the daemon (nice +5): when both
want the machine's cores, scraping goes first and the feeds take the rest. Before anything else
it keeps glibc's malloc to one arena and imports httpx without its command-line tool's
libraries (`healerd.adapters.lean_process`).
"""

import os

FEEDS_NICENESS = 5

try:
    os.nice(FEEDS_NICENESS)
except OSError:   # a system that refuses it: run at the daemon's priority
    pass

from healerd.adapters.lean_process import import_httpx, limit_malloc_arenas  # noqa: E402

limit_malloc_arenas()
import_httpx()

from healerd.actors.feeds import child_main  # noqa: E402  (after the lines above, on purpose)

child_main()
