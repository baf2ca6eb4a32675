"""The job's own environment on a node: its plain ``env``, its sealed ``--export`` values and,
under them, what a login of its owner would set.

Sealed values are opened with the nodes' environment key (``agents.auth.sealed_env``), loaded
when a launch first carries some, by libsodium (an SLX1 blob of an older client, or a node
without libsodium, loads ``cryptography``). ``SLUICE_SEALED_TAGS`` then says which variables
came sealed (``agents.auth.sealed_tags``), so that ``srun`` does not send them back in the
clear.

**The login variables.** ``sbatch --export=NONE`` or ``--export=NAME,…`` makes slurmd load the
user's login environment (``SLURM_GET_USER_ENV=1``: ``env_array_user_default`` runs
``su - USER -c env`` and the job's variables go on top of what it prints). Sluice never runs a
user's shell or dot files to find an environment: :func:`login_environment` sets the subset a
login sets before any of the user's files run, ``HOME``, ``USER``, ``LOGNAME`` and ``SHELL``
from the owner's passwd entry on this node, and ``PATH`` from ``/etc/login.defs`` (``ENV_PATH``,
``ENV_SUPATH`` for uid 0, as ``su -`` and ``login`` read it). Each fills only a variable the
job's environment lacks, whatever ``--export`` was: the submitter's exported values win.
"""

from __future__ import annotations

import functools
import pwd
from pathlib import Path
from typing import Any

from agents.auth.key_files import KeyFileError
from agents.auth.sealed_tags import TAGS_VARIABLE, tags_for
from schemas.ranges import SEALED_SCRIPT_PREFIX
from streams.settings import Settings

__all__ = ["LOGIN_DEFS", "ScriptRefusedError", "login_environment", "login_path", "open_job_env",
           "open_job_script"]

LOGIN_DEFS = Path("/etc/login.defs")
"""Where ``login`` and ``su -`` read a login's ``PATH`` (``ENV_PATH``, ``ENV_SUPATH``)."""
_USER_PATH = "/usr/local/bin:/usr/bin:/bin"
_ROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_SHELL = "/bin/sh"
"""A login's shell when the passwd entry names none (login(1), su(1))."""


def open_job_env(settings: Settings, launch: dict[str, Any]) -> dict[str, str]:
    """The job's environment from its launch, over its owner's login variables (ValueError
    when the sealed values do not open: the launch is refused)."""
    env = dict(launch.get("env") or {})
    sealed = str(launch.get("sealed_env") or "")
    if sealed:
        from agents.auth.daemon_keys import load_env_private_key  # noqa: PLC0415 - when first needed
        from agents.auth.sealed_env import open_env  # noqa: PLC0415 - when first needed

        try:
            key = load_env_private_key(settings)
        except KeyFileError as exc:
            raise ValueError(str(exc)) from exc
        opened = open_env(sealed, key, settings.cluster, str(launch.get("user")))
        env.update(opened)
        # which of them came sealed, for srun to leave out of its request (sealed_tags)
        if opened:
            env[TAGS_VARIABLE] = tags_for(opened)
    return {**login_environment(str(launch.get("user") or "")), **env}


class ScriptRefusedError(ValueError):
    """A launch's sealed batch script that does not open here: the launch is refused."""


def open_job_script(settings: Settings, launch: dict[str, Any]) -> str:
    """The launch's batch script, opened with the nodes' private key when it came sealed
    (``agents.auth.sealed_script``; ScriptRefusedError: the launch is refused)."""
    script = str(launch.get("script") or "")
    if not script.startswith(SEALED_SCRIPT_PREFIX):
        return script
    from agents.auth.daemon_keys import load_env_private_key  # noqa: PLC0415 - when first needed
    from agents.auth.sealed_script import (  # noqa: PLC0415 - when first needed
        SealedScriptError,
        open_script,
    )

    try:
        return open_script(script, load_env_private_key(settings), settings.cluster,
                           str(launch.get("user")))
    except (KeyFileError, SealedScriptError) as exc:
        raise ScriptRefusedError(str(exc)) from exc


def login_environment(user: str, defs: Path = LOGIN_DEFS) -> dict[str, str]:
    """``HOME``, ``USER``, ``LOGNAME``, ``SHELL`` and ``PATH`` of a login of ``user`` on this
    node, read from its passwd entry and ``defs``, no code of the user's run ({} for a user this
    node does not know: the owner check refuses the launch, ``UnknownUser``)."""
    try:
        entry = pwd.getpwnam(user) if user else None
    except (KeyError, ValueError):  # ValueError: a name with a NUL
        entry = None
    if entry is None:
        return {}
    return {"HOME": entry.pw_dir, "USER": entry.pw_name, "LOGNAME": entry.pw_name,
            "SHELL": entry.pw_shell or _SHELL, "PATH": login_path(entry.pw_uid == 0, defs)}


def login_path(root: bool, defs: Path = LOGIN_DEFS) -> str:
    """The ``PATH`` a login gets: ``ENV_SUPATH`` (root) or ``ENV_PATH`` in ``defs``, written
    ``PATH=/a:/b`` or ``/a:/b``; the usual default when the file or the entry is missing. The
    file is read again only when it changed (a launch pays a ``stat``, not a read)."""
    key = "ENV_SUPATH" if root else "ENV_PATH"
    try:
        stamp = defs.stat().st_mtime_ns
    except OSError:
        stamp = -1
    return _login_path(key, defs, stamp) or (_ROOT_PATH if root else _USER_PATH)


@functools.lru_cache(maxsize=8)
def _login_path(key: str, defs: Path, stamp: int) -> str:
    """``key``'s value in ``defs`` as it was at ``stamp`` (its mtime), "" when absent."""
    del stamp  # part of the cache's key only
    try:
        lines = defs.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        fields = line.split()
        if len(fields) == 2 and fields[0] == key:  # NAME VALUE
            value = fields[1].removeprefix("PATH=")
            if value:
                return value
    return ""
