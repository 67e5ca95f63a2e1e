"""Start ``dagster dev`` with the default SIGINT/SIGTERM handlers restored, then exec it.

A process started with ``&`` from a non-interactive shell inherits *ignored* SIGINT and
SIGTERM; ``dagster dev`` then cannot be stopped cleanly and leaves its webserver and daemon
behind. Through this wrapper, ``kill -TERM <pid>`` stops all of them:

    .venv/bin/python scripts/dagster_dev.py -p 3000 &
"""

import os
import signal
import sys
from pathlib import Path

if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    dagster = str(Path(sys.executable).with_name("dagster"))
    os.execv(dagster, [dagster, "dev", *sys.argv[1:]])
