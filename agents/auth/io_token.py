"""srun's ``io_token`` and environment sealed to the nodes' key, so the ledger does not carry
them in the clear.

srun (``sluice run``) listens for its step's nodes and takes the first connection of each
node that presents its random ``io_token`` and step SLUID; the step's output lines, task exits
and srun's own stdin go over it. The token travels in ``StartStep``, then in the shard's
``StepPending``/``StepStarted`` (the ledger) and each node's ``LaunchStep``. On ``sluice up``'s
users' listener every local user reads the ledger: seen (red team, 8 Dec 2026), another user
following it connected to alice's srun with the token before her node did, in 2 of 3 runs:
srun printed the stranger's lines as her task's output, exited with the stranger's exit code,
dropped her node's own connection (a second one for a node) and wrote her stdin to the
stranger.

With the nodes' public key configured (``EnvPublicKey``, which ``sluice up`` makes; the same key
seals ``--export`` values: :mod:`agents.auth.sealed_env`) srun sends ``sealed:<blob>``: the
token sealed to that key and bound to the cluster, the job and the step SLUID (a sealed token
copied into another step, or another user's job, does not open). Only a holder of the nodes'
private key opens it; a node given a plain token (a client without the key, or an older one)
uses it as it is.

srun's exported environment (Slurm's default ``--export=ALL``: the user's whole shell
environment, its tokens and keys too) went the same way, in ``StartStep.env``: bob read alice's
``AWS_SECRET_ACCESS_KEY`` in her ``StepStarted`` (same day, live). Slurm shows a step's
environment to no one. It is now sealed the same way into one variable, ``SLUICE_SEALED_STEP_ENV``
(the step's ``env`` holds nothing else), which the node opens.
"""

from __future__ import annotations

from typing import Any

from streams.settings import Settings

__all__ = ["SEALED_ENV", "SEALED_PREFIX", "open_io_token", "open_step_env", "seal_io_token",
           "seal_step_env"]

SEALED_PREFIX = "sealed:"
SEALED_ENV = "SLUICE_SEALED_STEP_ENV"
"""The one variable of a sealed step environment: the sealed box of srun's variables."""
_NAME = "io_token"


def _bound(job_sluid: str, step_sluid: str) -> str:
    """What a box is bound to (sealed_env binds a user name): the job and the step. The step
    alone was not enough: another user could send alice's box under her step SLUID in a job of
    his own, and his node would open it (her variables in his tasks, her token shown to his
    listener)."""
    return f"job {job_sluid} step {step_sluid}"


def _public_key(settings: Settings) -> bytes | None:
    """The nodes' key srun seals to, None when none is configured (ValueError: unreadable)."""
    from agents.auth.key_files import KeyFileError  # noqa: PLC0415 - when first needed
    from agents.auth.public_keys import env_key_paths, env_public_raw  # noqa: PLC0415 - when first needed

    if not (settings.env_pubkey or env_key_paths(settings)[1].exists()):
        return None  # no key configured: in the clear, as before (docs/security.md)
    try:
        return env_public_raw(settings)
    except KeyFileError as exc:
        raise ValueError(f"the nodes' environment key: {exc}") from exc


def seal_io_token(settings: Settings, token: str, job_sluid: str, step_sluid: str) -> str:
    """``token`` as srun sends it: sealed when this client has the nodes' key, else plain
    (ValueError: a key configured but unreadable)."""
    key = _public_key(settings)
    if key is None:
        return token
    from agents.auth.sealed_env import seal_env  # noqa: PLC0415 - when first needed

    return SEALED_PREFIX + seal_env({_NAME: token}, key, settings.cluster,
                                    _bound(job_sluid, step_sluid))


def seal_step_env(settings: Settings, env: dict[str, str], job_sluid: str,
                  step_sluid: str) -> dict[str, str]:
    """srun's exported ``env`` as it sends it: ``{SEALED_ENV: box}`` when this client has the
    nodes' key (and there is anything to seal), else as it is."""
    key = _public_key(settings) if env else None
    if key is None:
        return env
    from agents.auth.sealed_env import seal_env  # noqa: PLC0415 - when first needed

    return {SEALED_ENV: seal_env(env, key, settings.cluster, _bound(job_sluid, step_sluid))}


def open_step_env(settings: Settings, command: dict[str, Any]) -> dict[str, str]:
    """srun's exported variables of a ``LaunchStep``: opened with the nodes' private key when
    sealed (ValueError when they do not open), else as sent."""
    env = {str(k): str(v) for k, v in dict(command.get("env") or {}).items()}
    sealed = env.pop(SEALED_ENV, None)
    if sealed is None:
        return env
    from agents.auth.daemon_keys import load_env_private_key  # noqa: PLC0415 - when first needed
    from agents.auth.key_files import KeyFileError  # noqa: PLC0415 - when first needed
    from agents.auth.sealed_env import SealedEnvError, open_env  # noqa: PLC0415 - when first needed

    try:
        opened = open_env(sealed, load_env_private_key(settings), settings.cluster,
                          _of(command))
    except (KeyFileError, SealedEnvError) as exc:
        raise ValueError(f"srun's sealed environment does not open: {exc}") from exc
    return {**env, **opened}


def _of(command: dict[str, Any]) -> str:
    return _bound(str(command.get("job_sluid") or ""), str(command.get("step_sluid") or ""))


def open_io_token(settings: Settings, command: dict[str, Any]) -> str:
    """The token of a ``LaunchStep`` to present to srun: opened with the nodes' private key
    when sealed (ValueError when it does not open), else as sent."""
    token = str(command.get("io_token") or "")
    if not token.startswith(SEALED_PREFIX):
        return token
    from agents.auth.daemon_keys import load_env_private_key  # noqa: PLC0415 - when first needed
    from agents.auth.key_files import KeyFileError  # noqa: PLC0415 - when first needed
    from agents.auth.sealed_env import SealedEnvError, open_env  # noqa: PLC0415 - when first needed

    try:
        key = load_env_private_key(settings)
        opened = open_env(token[len(SEALED_PREFIX):], key, settings.cluster,
                          _of(command))
    except (KeyFileError, SealedEnvError) as exc:
        raise ValueError(f"srun's sealed io_token does not open: {exc}") from exc
    value = opened.get(_NAME)
    if not isinstance(value, str):
        raise ValueError("srun's sealed io_token holds no token")
    return value
