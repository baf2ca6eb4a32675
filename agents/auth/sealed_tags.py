"""Which of a job's variables came sealed, so ``srun`` does not send them back in the clear.

A job's ``--export`` values travel sealed to the nodes' key (``agents.auth.sealed_env``) and
are opened only by the node that starts the job. ``srun`` inside the job sends its own
environment (Slurm's ``--export=ALL``) with its ``StartStep``, which was never sealed: the
opened values went back onto the requests topic, the ledger (``StepStarted``) and every node's
``LaunchStep`` in the clear (red team, 7 Dec 2026: bob's plain consumer read alice's sealed
secret in four topics once her job ran ``srun true``).

The node now adds :data:`TAGS_VARIABLE` to the job's environment: a fresh random key and, per
sealed variable, a keyed BLAKE2b of its name and value (:func:`tags_for`; BLAKE2's own keyed
mode, RFC 7693, from the standard library's ``_blake2``). ``srun`` leaves out
every variable whose value still matches its tag (:func:`without_sealed`): each node of the step
opens the job's sealed values again and puts them under srun's (``agents/node/steps.py``), so
the tasks see the same values. A variable the job changed no longer matches and is sent as it
is now (the job's own choice), as any other variable. The tag variable itself never leaves:
srun sends no ``SLUICE_*`` variable. The key and tags only live in the job's own environment
(its processes, its user). ``_blake2`` is a built-in module: neither ``hashlib`` nor ``hmac``
is imported, which would load OpenSSL's libcrypto into the node daemon and the CLI
(``agents.auth.headers.sha256_hex`` says what that costs).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping

try:
    from _blake2 import blake2b
except ImportError:  # an interpreter built without it: hashlib's (OpenSSL's) then
    from hashlib import blake2b

__all__ = ["TAGS_VARIABLE", "tags_for", "without_sealed"]

TAGS_VARIABLE = "SLUICE_SEALED_TAGS"
_TAG_CHARS = 32  # 128 bits of the digest


def _tag(key: bytes, name: str, value: str) -> str:
    data = name.encode(errors="surrogateescape") + b"\0" + value.encode(errors="surrogateescape")
    return blake2b(data, key=key, digest_size=_TAG_CHARS // 2).hexdigest()


def tags_for(sealed: Mapping[str, str], key: bytes | None = None) -> str:
    """The value of :data:`TAGS_VARIABLE` for the job's opened sealed variables:
    ``<base64 key>;<name>=<tag>;…`` ("" when there are none)."""
    if not sealed:
        return ""
    key = os.urandom(16) if key is None else key
    marks = (f"{name}={_tag(key, name, value)}" for name, value in sorted(sealed.items())
             if "=" not in name and ";" not in name)
    return ";".join((base64.b64encode(key).decode(), *marks))


def without_sealed(env: Mapping[str, str], tags: str) -> dict[str, str]:
    """``env`` without the variables whose value still matches its tag in ``tags``."""
    key_text, _, rest = tags.partition(";")
    try:
        key = base64.b64decode(key_text, validate=True)
    except ValueError:
        return dict(env)
    marks = dict(item.partition("=")[::2] for item in rest.split(";") if "=" in item)
    return {name: value for name, value in env.items()
            if marks.get(name) != _tag(key, name, value)}
