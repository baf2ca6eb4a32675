"""Kafka client security (SASL/SCRAM over TLS) for every client of ours, from one configuration.

| variable | conf key | default | meaning |
|---|---|---|---|
| ``SLUICE_KAFKA_SECURITY`` | ``KafkaSecurity`` | ``PLAINTEXT`` | or ``SSL``, ``SASL_SSL`` |
| ``SLUICE_KAFKA_MECHANISM`` | ``KafkaMechanism`` | ``SCRAM-SHA-512`` | SASL mechanism |
| ``SLUICE_KAFKA_CA`` | ``KafkaCA`` | system CAs | PEM file of the CA that signed the brokers |
| ``SLUICE_KAFKA_USER`` | - | ``""`` | SASL principal name (environment only) |
| ``SLUICE_KAFKA_PASSWORD_FILE`` | - | ``""`` | file holding the password (environment only) |

The password itself is never taken from the environment, never logged and never put in a
child's environment: only the *path* of a file readable by its owner alone (mode 0600 or
stricter; a group- or world-readable file is refused with :class:`KafkaSecurityError`).
The system-wide client configuration (``SLUICE_CONF``, default ``/etc/sluice/sluice.conf``)
may hold the conf keys above; it holds no secret, and the environment wins over it, and it
over what ``sluice up --secure`` recorded in ``$SLUICE_HOME/run/system.json``.

:func:`librdkafka_config` builds the confluent-kafka settings (producers, consumers, admin),
:func:`faust_credentials` the aiokafka/faust ``broker_credentials``; nothing else builds them.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ssl

__all__ = [
    "ENV_KEYS",
    "KafkaSecurity",
    "KafkaSecurityError",
    "faust_credentials",
    "librdkafka_config",
]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_SSL")
MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256")
ENV_KEYS = (
    "SLUICE_KAFKA_SECURITY", "SLUICE_KAFKA_MECHANISM", "SLUICE_KAFKA_CA",
    "SLUICE_KAFKA_USER", "SLUICE_KAFKA_PASSWORD_FILE",
)
_CONF_KEYS = {
    "KafkaSecurity": "SLUICE_KAFKA_SECURITY",
    "KafkaMechanism": "SLUICE_KAFKA_MECHANISM",
    "KafkaCA": "SLUICE_KAFKA_CA",
}
_DEFAULT_CONF = "/etc/sluice/sluice.conf"


class KafkaSecurityError(ValueError):
    """The Kafka security settings are incomplete or unsafe (named in the message)."""


def _conf_values(path: Path) -> dict[str, str]:
    """The Kafka security keys of the client configuration file (other keys are not ours)."""
    try:
        text = path.read_text()
    except OSError:
        return {}
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.split("#", 1)[0].strip().partition("=")
        if sep and key.strip() in _CONF_KEYS:
            found[_CONF_KEYS[key.strip()]] = value.strip()
    return found


def _system_values(env: Mapping[str, str]) -> dict[str, str]:
    """What ``sluice up --secure`` recorded in ``$SLUICE_HOME/run/system.json`` (its user)."""
    home = Path(env.get("SLUICE_HOME", str(Path.home() / ".local" / "state" / "sluice")))
    try:
        kafka = json.loads((home / "run" / "system.json").read_text()).get("kafka") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    keys = {"security": "SLUICE_KAFKA_SECURITY", "ca": "SLUICE_KAFKA_CA",
            "user": "SLUICE_KAFKA_USER", "password_file": "SLUICE_KAFKA_PASSWORD_FILE"}
    if not isinstance(kafka, dict):
        return {}
    return {var: str(kafka[key]) for key, var in keys.items() if key in kafka}


def read_password(path: Path) -> str:
    """The password in ``path``; refuses a file others could read, or an empty one."""
    try:
        info = path.stat()
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise KafkaSecurityError(f"Kafka password file {path}: cannot be read: "
                                 f"{exc.strerror or exc}") from exc
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KafkaSecurityError(
            f"Kafka password file {path} is readable by others (mode "
            f"{stat.S_IMODE(info.st_mode):o}): chmod 600 it")
    password = text.strip()
    if not password:
        raise KafkaSecurityError(f"Kafka password file {path} is empty")
    return password


@dataclass(frozen=True, slots=True)
class KafkaSecurity:
    """How a client authenticates to the brokers and checks them (no password held here)."""

    protocol: str = "PLAINTEXT"
    mechanism: str = "SCRAM-SHA-512"
    ca: str = ""
    user: str = ""
    password_file: str = ""

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise KafkaSecurityError(
                f"SLUICE_KAFKA_SECURITY is one of {', '.join(PROTOCOLS)}, not {self.protocol!r}")
        if self.mechanism not in MECHANISMS:
            raise KafkaSecurityError(
                f"SLUICE_KAFKA_MECHANISM is one of {', '.join(MECHANISMS)}, "
                f"not {self.mechanism!r}")
        if self.protocol == "SASL_SSL" and not (self.user and self.password_file):
            raise KafkaSecurityError(
                "SLUICE_KAFKA_SECURITY=SASL_SSL needs SLUICE_KAFKA_USER and "
                "SLUICE_KAFKA_PASSWORD_FILE")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> KafkaSecurity:
        """Read the environment (default: this process's) over the client configuration."""
        given = os.environ if env is None else env
        source = {**_system_values(given), **_conf_values(Path(given.get("SLUICE_CONF",
                                                                         _DEFAULT_CONF))),
                  **given}
        protocol = source.get("SLUICE_KAFKA_SECURITY", "PLAINTEXT").strip().upper()
        return cls(
            protocol=protocol or "PLAINTEXT",
            mechanism=source.get("SLUICE_KAFKA_MECHANISM", "SCRAM-SHA-512").strip().upper(),
            ca=source.get("SLUICE_KAFKA_CA", "").strip(),
            user=source.get("SLUICE_KAFKA_USER", "").strip(),
            password_file=source.get("SLUICE_KAFKA_PASSWORD_FILE", "").strip(),
        )

    def as_env(self) -> dict[str, str]:
        """The environment that gives a child process these settings (a path, no password)."""
        return {
            "SLUICE_KAFKA_SECURITY": self.protocol, "SLUICE_KAFKA_MECHANISM": self.mechanism,
            "SLUICE_KAFKA_CA": self.ca, "SLUICE_KAFKA_USER": self.user,
            "SLUICE_KAFKA_PASSWORD_FILE": self.password_file,
        }

    def as_principal(self, user: str, password_file: Path) -> KafkaSecurity:
        """The same broker settings for another principal."""
        return KafkaSecurity(self.protocol, self.mechanism, self.ca, user, str(password_file))

    @property
    def secured(self) -> bool:
        """True when the connection uses TLS."""
        return self.protocol != "PLAINTEXT"

    def __repr__(self) -> str:
        return (f"KafkaSecurity({self.protocol}, user={self.user!r}, ca={self.ca!r}, "
                f"password_file={self.password_file!r})")


def librdkafka_config(security: KafkaSecurity | None = None) -> dict[str, Any]:
    """The confluent-kafka (librdkafka) settings for ``security`` (default: from the env)."""
    sec = KafkaSecurity.from_env() if security is None else security
    if not sec.secured:
        return {}
    config: dict[str, Any] = {
        "security.protocol": sec.protocol,
        "ssl.endpoint.identification.algorithm": "https",
    }
    if sec.ca:
        config["ssl.ca.location"] = sec.ca
    if sec.protocol == "SASL_SSL":
        config["sasl.mechanism"] = sec.mechanism
        config["sasl.username"] = sec.user
        config["sasl.password"] = read_password(Path(sec.password_file))
    return config


def ssl_context(security: KafkaSecurity) -> ssl.SSLContext:
    """A TLS client context that trusts ``security.ca`` (or the system CAs) and checks names."""
    import ssl  # noqa: PLC0415 -- only a TLS client needs it (the CLI does not)

    context = ssl.create_default_context(cafile=security.ca or None)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def faust_credentials(security: KafkaSecurity | None = None) -> Any:
    """faust's ``broker_credentials`` (aiokafka) for ``security``; None for PLAINTEXT."""
    sec = KafkaSecurity.from_env() if security is None else security
    if not sec.secured:
        return None
    import faust  # noqa: PLC0415 -- only the worker needs faust

    if sec.protocol == "SSL":
        return faust.SSLCredentials(ssl_context(sec))
    return faust.SASLCredentials(
        username=sec.user,
        password=read_password(Path(sec.password_file)),
        mechanism=sec.mechanism,
        ssl_context=ssl_context(sec),
    )
