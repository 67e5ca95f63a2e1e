"""The ledger store resource: where fault rows and probe measurements are written."""

from __future__ import annotations

import dagster as dg

from faultsense_pipelines.ledger import LedgerStore

__all__ = ["LedgerResource"]


class LedgerResource(dg.ConfigurableResource):
    """The fault ledger at ``uri`` (local path, ``file://``, ``s3://``, any fsspec URI).

    ``uri`` is chosen by :func:`faultsense_pipelines.definitions.build_definitions`:
    ``--ledger``, else ``$FAULTSENSE_LEDGER``, else the fleet file's ``ledger:``
    (:func:`faultsense_pipelines.ledger.location.choose_ledger_uri`).

    Credentials for remote stores come from the filesystem's own environment variables
    (``AWS_ACCESS_KEY_ID``, ...), never from this config; the UI only shows the URI with
    any ``user:password@`` removed.
    """

    uri: str

    def store(self) -> LedgerStore:
        """A :class:`LedgerStore` for ``uri``."""
        return LedgerStore(self.uri)
