"""Applying the ACL table and SCRAM principals to a (secured) cluster, as an admin principal.

The connection's SASL/TLS settings are the process's (:mod:`streams.security`): run these as a
super-user (``SLUICE_KAFKA_USER=admin``). ``create_acls`` of a binding that exists changes
nothing, so :func:`apply_acls` is idempotent; it reports which rows were missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialAlteration,
    UserScramCredentialUpsertion,
)

from streams.acls import AclRow, acl_table
from streams.security import librdkafka_config
from streams.settings import Settings

__all__ = ["KafkaAdminError", "acl_fields", "apply_acls", "current_acls", "revoke_others",
           "upsert_scram_users"]

_TIMEOUT_S = 15.0


class KafkaAdminError(RuntimeError):
    """The broker refused or failed an administrative request (the reason is in the text)."""


def _admin(bootstrap: str, client: dict[str, Any] | None) -> AdminClient:
    base = librdkafka_config() if client is None else client
    return AdminClient({"bootstrap.servers": bootstrap, **base, "log_level": 3})


def acl_fields(binding: AclBinding) -> tuple[str, str, str, str, str, str]:
    """``(principal, operation, resource type, pattern type, name, permission)`` as text."""
    b: Any = binding  # the stubs type the enum fields as ``Enum | str | int``
    return (str(b.principal), b.operation.name, b.restype.name, b.resource_pattern_type.name,
            str(b.name), b.permission_type.name)


def _row_key(binding: AclBinding) -> tuple[str, str, str, str, str]:
    principal, operation, kind, pattern, name, _permission = acl_fields(binding)
    return (principal, kind, pattern, name, operation)


def current_acls(settings: Settings, client: dict[str, Any] | None = None) -> list[AclBinding]:
    """Every ACL binding on the cluster (any resource, any principal)."""
    anything: Any = None  # the filter's wildcard (the stubs want str)
    every = AclBindingFilter(ResourceType.ANY, anything, ResourcePatternType.ANY, anything,
                             anything, AclOperation.ANY, AclPermissionType.ANY)
    try:
        admin = _admin(settings.bootstrap, client)  # held until the answer is in
        found = admin.describe_acls(every, request_timeout=_TIMEOUT_S)
        return list(found.result(_TIMEOUT_S))
    except KafkaException as exc:
        raise KafkaAdminError(f"describing ACLs failed: {exc.args[0].str()}") from exc
    except TimeoutError as exc:
        raise KafkaAdminError(f"no answer from {settings.bootstrap} describing ACLs") from exc


def apply_acls(settings: Settings, *, dry_run: bool = False, names: dict[str, str] | None = None,
               client: dict[str, Any] | None = None,
               extra: Sequence[AclRow] = ()) -> list[AclRow]:
    """Create the table's missing bindings (and ``extra``'s); return the rows that were (or
    would be) added."""
    rows = [*acl_table(settings, names), *extra]
    have = {_row_key(b) for b in current_acls(settings, client)}
    missing = [r for r in rows if _row_key(r.binding()) not in have]
    if dry_run or not missing:
        return missing
    admin = _admin(settings.bootstrap, client)
    futures = admin.create_acls(
        [r.binding() for r in missing], request_timeout=_TIMEOUT_S)
    errors = []
    for binding, future in futures.items():
        try:
            future.result(_TIMEOUT_S)
        except KafkaException as exc:
            principal, operation, _kind, _pattern, name, _permission = acl_fields(binding)
            errors.append(f"{principal} {operation} {name}: "
                          f"{exc.args[0].str()}")
    if errors:
        raise KafkaAdminError("creating ACLs failed: " + "; ".join(errors))
    return missing


def revoke_others(settings: Settings, principal: str, keep: Sequence[AclRow],
                  client: dict[str, Any] | None = None) -> list[AclBinding]:
    """Delete ``principal``'s ALLOW bindings that ``keep`` lacks (a right an older table gave,
    e.g. ANONYMOUS's READ on the assign()-only readers' groups before 8 Dec 2026); return them."""
    wanted = {_row_key(r.binding()) for r in keep}
    stale = [b for b in current_acls(settings, client)
             if acl_fields(b)[0] == f"User:{principal}" and acl_fields(b)[5] == "ALLOW"
             and _row_key(b) not in wanted]
    if not stale:
        return []
    admin = _admin(settings.bootstrap, client)
    filters: list[AclBindingFilter] = [
        AclBindingFilter(b.restype, b.name, b.resource_pattern_type, b.principal, b.host,
                         b.operation, b.permission_type) for b in stale]
    try:
        for future in admin.delete_acls(filters, request_timeout=_TIMEOUT_S).values():
            future.result(_TIMEOUT_S)
    except KafkaException as exc:
        raise KafkaAdminError(f"deleting ACLs failed: {exc.args[0].str()}") from exc
    return stale


def upsert_scram_users(bootstrap: str, passwords: dict[str, str],
                       client: dict[str, Any] | None = None) -> None:
    """Create or reset SCRAM-SHA-512 credentials (``user → password``; nothing is logged)."""
    if not passwords:
        return
    changes: list[UserScramCredentialAlteration] = [
        UserScramCredentialUpsertion(
            name, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), password.encode())
        for name, password in sorted(passwords.items())
    ]
    admin = _admin(bootstrap, client)
    futures = admin.alter_user_scram_credentials(
        changes, request_timeout=_TIMEOUT_S)
    errors = []
    for name, future in futures.items():
        try:
            future.result(_TIMEOUT_S)
        except KafkaException as exc:
            errors.append(f"{name}: {exc.args[0].str()}")
    if errors:
        raise KafkaAdminError("creating SCRAM users failed: " + "; ".join(errors))
