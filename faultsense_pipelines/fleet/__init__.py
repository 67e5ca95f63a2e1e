"""The fleet file: which replicas to sweep, how, and where the ledger lives.

* :mod:`.file` -- the file itself (:func:`load_fleet`, :class:`Fleet`, :class:`Replica`),
  re-exported here.
* :mod:`.sections` -- the per-executor sections (``simulated:``, ``local:``, ``ray:``, ``vllm:``).
* :mod:`.maintenance` -- the ``maintenance:`` section.
* :mod:`.actions` -- the ``actions:`` section (guarded actions; run by :mod:`faultsense_pipelines.actions`).
* :mod:`.hours` -- the sweep hour keys (``YYYY-MM-DD-HH:00``), plain Python for the CLI.
"""

from __future__ import annotations

# exactly the names of ``file.__all__``, under the package's name
from .file import *  # noqa: F403
