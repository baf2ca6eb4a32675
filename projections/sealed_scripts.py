"""A job's sealed batch script opened for the viewers allowed to read it.

Clients seal batch scripts to the nodes' key (``agents.auth.sealed_script``): the ledger and
the views' store hold them sealed. ``GET /v1/jobs/<id>`` shows a job's script to its owner,
operators and the service (``projections.api_auth.private_view`` has dropped it for anyone
else); the views open it there when they hold the nodes' private key (``sluice up``'s views do:
one home, one key). Views without it answer ``script_sealed: true`` and no script, which
``sluice show job --script`` says in words.
"""

from __future__ import annotations

import logging
from typing import Any

from schemas.ranges import SEALED_SCRIPT_PREFIX
from streams.settings import Settings

__all__ = ["opened_script"]

log = logging.getLogger(__name__)


def opened_script(row: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """``row`` with its sealed ``script`` opened, or replaced by ``script_sealed`` when these
    views cannot open it; any other row as it is."""
    script = row.get("script")
    if not isinstance(script, str) or not script.startswith(SEALED_SCRIPT_PREFIX):
        return row
    from agents.auth.daemon_keys import load_env_private_key  # noqa: PLC0415 - when first needed
    from agents.auth.key_files import KeyFileError  # noqa: PLC0415 - when first needed
    from agents.auth.sealed_script import open_script  # noqa: PLC0415 - when first needed

    try:
        text = open_script(script, load_env_private_key(settings), settings.cluster,
                           str(row.get("user") or ""))
    except (KeyFileError, ValueError) as exc:
        log.info("job %s: its sealed batch script not opened here: %s", row.get("job_id"), exc)
        return {**{k: v for k, v in row.items() if k != "script"}, "script_sealed": True}
    return {**row, "script": text}
