"""``sluice up`` (``--secure``, the default for the bundled broker): SASL_SSL, one principal per
process.

1. ``infra.kafka`` starts the broker with ``secure=True`` (client port ``$SLUICE_KAFKA_PORT``
   if set) (local CA, broker keystore, admin
   SCRAM credential at format time, StandardAuthorizer; see docs/security.md);
2. a password per principal (``worker``, ``views``, ``node``, ``user``) is made once, in
   ``$SLUICE_HOME/secrets/<name>.password`` (directory 0700, files 0600: readable by the user
   who ran ``sluice up`` only); the admin's is the broker's ``tls/admin.password``;
3. the SCRAM credentials are created and the ACL table applied, as ``admin``;
4. every process is started with ``SLUICE_KAFKA_*`` naming *its* principal and password file
   (never a password); the CLI of the user who ran ``up`` finds the ``user`` principal through
   ``run/system.json``.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from streams.acls import ANONYMOUS, PRINCIPALS, acl_table, users_listener_table
from streams.kafka_admin import apply_acls, revoke_others, upsert_scram_users
from streams.security import KafkaSecurity
from streams.settings import Settings

__all__ = ["SecureSystem", "start_secure_broker"]


class SecureSystem:
    """The principals of one ``sluice up --secure`` system."""

    def __init__(self, home: Path, ca: Path, admin_password_file: Path) -> None:
        self.secrets = home / "secrets"
        self.ca = ca
        self.admin_password_file = admin_password_file
        self.users_bootstrap = ""  # the broker's PLAINTEXT users' listener, as ANONYMOUS

    def security(self, principal: str) -> KafkaSecurity:
        """The settings a process of ``principal`` connects with."""
        file = (self.admin_password_file if principal == "admin"
                else self.secrets / f"{principal}.password")
        return KafkaSecurity("SASL_SSL", ca=str(self.ca), user=principal,
                             password_file=str(file))

    def env(self, principal: str) -> dict[str, str]:
        """The child environment of a process running as ``principal``."""
        return self.security(principal).as_env()

    def ensure_passwords(self) -> dict[str, str]:
        """Each principal's password, made on the first ``up`` (then kept)."""
        from infra.kafka._tls import write_secret

        self.secrets.mkdir(parents=True, exist_ok=True)
        self.secrets.chmod(0o700)
        passwords = {}
        for name in PRINCIPALS:
            path = self.secrets / f"{name}.password"
            if not path.exists():
                write_secret(path, secrets.token_urlsafe(24))
            passwords[name] = path.read_text(encoding="utf-8").strip()
        return passwords


def revoke_stale(settings: Settings, client: dict[str, str] | None) -> None:
    """Delete every right of the table's principals (and ANONYMOUS) that the table no longer
    has: ``apply_acls`` only creates, so a directory made before a right was taken away kept
    it (READ on the assign()-only readers' groups, 8 Dec 2026). This broker's ACLs are
    ``sluice up``'s alone."""
    table = acl_table(settings)
    revoke_others(settings, ANONYMOUS, users_listener_table(settings), client=client)
    for principal in PRINCIPALS:
        revoke_others(settings, principal, [r for r in table if r.principal == principal],
                      client=client)


def start_secure_broker(settings: Settings, brokers: int = 1,
                        port: int | None = None) -> tuple[str, SecureSystem]:
    """Start (or adopt) the secured local broker (``brokers`` nodes, node 1's client port
    ``port``, else ``$SLUICE_KAFKA_PORT``, else a free one); create principals and ACLs; its
    bootstrap."""
    from infra.kafka import LocalKafka

    if port is None and os.environ.get("SLUICE_KAFKA_PORT"):
        port = int(os.environ["SLUICE_KAFKA_PORT"])
    kafka = LocalKafka.start(settings.home / "kafka", nodes=brokers, port=port, secure=True)
    assert kafka.tls is not None
    system = SecureSystem(settings.home, kafka.tls.ca, kafka.tls.admin_password_file)
    upsert_scram_users(kafka.bootstrap, system.ensure_passwords(), client=kafka.client_config)
    apply_acls(settings.with_(bootstrap=kafka.bootstrap), client=kafka.client_config,
               extra=users_listener_table(settings))
    revoke_stale(settings.with_(bootstrap=kafka.bootstrap), kafka.client_config)
    system.users_bootstrap = kafka.users_bootstrap
    return kafka.bootstrap, system
