"""``sluice submit --export``: what environment a job gets, with Slurm's meanings.

| ``--export`` | the job's environment |
|---|---|
| (none), ``ALL`` | the submitter's environment, captured at submission |
| ``NONE`` | the submitter's ``SLURM*`` variables alone |
| ``NAME=VALUE,NAME2`` | these (``NAME2`` from the submitter's environment), its ``SLURM*`` ones |
| ``ALL,NAME=VALUE`` | the submitter's environment and these |

Whatever the mode, the job also gets, as sbatch puts them in its own environment before it
captures it:

- ``SLURM_SUBMIT_DIR``, the directory the command runs in (``getcwd``, not ``--chdir``), over
  any other value (one inherited from a job the command runs in, one in ``--export``);
- ``SLURM_UMASK``, the submitter's umask (``0077``), unless the variables already hold one:
  the node starts the job's command under it (its output files and the files it makes), not
  under the node daemon's umask.

With ``NONE`` or a list sbatch also asks slurmd for the user's login environment
(``SLURM_GET_USER_ENV``); a Sluice node always puts a login's ``HOME``, ``USER``, ``LOGNAME``,
``SHELL`` and ``PATH`` under the job's variables (``agents/node/job_env.py``).

The client's own settings and credentials (``SLUICE_*``, ``KAFKA_*``) are never captured by
``ALL`` (name them explicitly to pass one). The node daemon's environment never reaches a job.
With the nodes' public key configured (``EnvPublicKey``, ``sluice up`` makes it) the values
are sealed to it (:mod:`agents.auth.sealed_env`) and ``env`` stays empty on the wire.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from streams.settings import Settings

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["job_environment", "seal_spec_env", "submission_directory", "submitter_umask"]

_NEVER_CAPTURED = ("SLUICE_", "KAFKA_")


def job_environment(items: Sequence[str], environ: Mapping[str, str]) -> dict[str, str]:
    """The variables a job gets for the ``--export`` arguments ``items`` (ValueError on a bad
    one)."""
    tokens = [t for item in items for t in item.split(",") if t] if items else ["ALL"]
    env: dict[str, str] = {}
    modes = {t for t in tokens if t in ("ALL", "NONE")}
    if modes == {"ALL", "NONE"}:
        raise ValueError("--export: ALL and NONE together")
    if "ALL" in modes:
        env.update({k: v for k, v in environ.items() if not k.startswith(_NEVER_CAPTURED)})
    for token in tokens:
        if token in ("ALL", "NONE"):
            continue
        name, sep, value = token.partition("=")
        if not name or "\0" in token:
            raise ValueError(f"--export: {token!r} is not NAME=VALUE, NAME, ALL or NONE")
        if sep:
            env[name] = value
        elif name in environ:
            env[name] = environ[name]
    if "ALL" not in modes:  # sbatch's env_array_merge_slurm_spank: these go whatever is named
        env.update({k: v for k, v in environ.items() if k.startswith("SLURM")})
    submit_dir = submission_directory()
    if submit_dir:
        env["SLURM_SUBMIT_DIR"] = submit_dir
    env.setdefault("SLURM_UMASK", environ.get("SLURM_UMASK") or submitter_umask())
    return env


def submission_directory() -> str:
    """The directory this process runs in, as sbatch's ``SLURM_SUBMIT_DIR`` ("" when it is
    gone: sbatch then sets none either)."""
    try:
        return str(Path.cwd())
    except OSError:
        return ""


def submitter_umask() -> str:
    """This process's umask as sbatch writes ``SLURM_UMASK`` (four octal digits: ``0022``)."""
    mask = os.umask(0o077)
    os.umask(mask)
    return f"{mask:04o}"


def seal_spec_env(spec: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """``spec`` with its environment and its batch script sealed to the nodes' key, when this
    client has it (``agents.auth.sealed_env``, ``agents.auth.sealed_script``)."""
    from agents.auth.key_files import KeyFileError
    from agents.auth.public_keys import env_key_paths, env_public_raw

    if not (spec.get("env") or spec.get("script")) or not (
            settings.env_pubkey or env_key_paths(settings)[1].exists()):
        return spec  # no key configured: they travel in the clear (docs/security.md)
    try:
        key = env_public_raw(settings)
    except KeyFileError as exc:
        raise ValueError(f"the nodes' environment key: {exc}") from exc
    sealed = dict(spec)
    user = str(spec["user"])
    if spec.get("env"):
        from agents.auth.sealed_env import seal_env

        sealed.update(env={}, sealed_env=seal_env(dict(spec["env"]), key, settings.cluster, user))
    if spec.get("script"):
        from agents.auth.sealed_script import seal_script

        sealed["script"] = seal_script(str(spec["script"]), key, settings.cluster, user)
    return sealed
