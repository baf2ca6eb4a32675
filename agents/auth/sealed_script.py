"""Batch scripts sealed to the nodes' key, so the ledger does not carry them in the clear.

A job's batch script travels in ``JobSpec.script``: in ``SubmitJob``, the ledger's
``JobQueued`` and each ``LaunchRun``. On ``sluice up``'s users' listener every local user reads
the ledger, so every user read every other user's scripts (red team, 8 Dec 2026;
docs/security.md), which Slurm shows no other user whatever its ``PrivateData`` (``scontrol
write batch_script`` and ``sacct --batch-script`` are the owner's and the operators').

With the nodes' public key configured (``EnvPublicKey``, as for ``--export`` values:
:mod:`agents.auth.sealed_env`) the client sends ``sealed:<blob>``: the script compressed
(zlib) and sealed with the same box, bound to the cluster and the job's user (a sealed script
copied into another user's job does not open). Only a holder of the nodes' private key opens
it: the node daemons, to run it, and the views when they hold that key too (``sluice up``'s do:
they show it to its owner and operators, ``projections/api_auth.py``). A script that does not
open refuses the launch. Opening inflates at most :data:`MAX_SCRIPT_CHARS` x 4 bytes (a
client's own zlib bomb stops there).
"""

from __future__ import annotations

import base64
import binascii
import zlib

from agents.auth.sealed_env import SealedEnvError, open_env, seal_env
from schemas.ranges import MAX_SCRIPT_CHARS, SEALED_SCRIPT_PREFIX

__all__ = ["PREFIX", "SealedScriptError", "is_sealed", "open_script", "seal_script"]

PREFIX = SEALED_SCRIPT_PREFIX
_NAME = "script"
_MAX_BYTES = MAX_SCRIPT_CHARS * 4  # UTF-8: at most 4 bytes a character


class SealedScriptError(ValueError):
    """A sealed script that does not open (wrong key, user, cluster, altered, too large)."""


def is_sealed(script: str) -> bool:
    """Whether ``script`` is a sealed script (an empty one is not)."""
    return script.startswith(PREFIX)


def seal_script(script: str, node_key: bytes, cluster: str, user: str) -> str:
    """``script`` as the client sends it, sealed to ``node_key`` and bound to ``user``."""
    packed = base64.b64encode(zlib.compress(script.encode(), 6)).decode()
    return PREFIX + seal_env({_NAME: packed}, node_key, cluster, user)


def open_script(script: str, node_key: bytes, cluster: str, user: str) -> str:
    """The text of a sealed ``script`` (as it is when not sealed)."""
    if not is_sealed(script):
        return script
    try:
        opened = open_env(script[len(PREFIX):], node_key, cluster, user)
        packed = base64.b64decode(opened[_NAME], validate=True)
        inflater = zlib.decompressobj()
        data = inflater.decompress(packed, _MAX_BYTES)
        if inflater.unconsumed_tail or not inflater.eof:
            raise SealedScriptError(f"the script inflates past {_MAX_BYTES} bytes, or is cut")
        text = data.decode()
    except (SealedEnvError, KeyError, binascii.Error, zlib.error, UnicodeDecodeError) as exc:
        raise SealedScriptError(f"the sealed batch script does not open: {exc}") from exc
    if len(text) > MAX_SCRIPT_CHARS:
        raise SealedScriptError(f"the sealed batch script has {len(text)} characters, at "
                                f"most {MAX_SCRIPT_CHARS}")
    return text
