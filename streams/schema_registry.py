"""Talk to a schema registry with the Confluent REST API: publish Sluice's schemas, look ids up.

The HTTP client is confluent-kafka's own :class:`SchemaRegistryClient` (``httpx`` underneath);
this module only fixes the conventions Sluice uses with it:

- **subjects follow RecordNameStrategy**: the subject of a record type is its full name
  (``sluice.SubmitJob``), not ``<topic>-value``, because ``sluice.requests`` carries several
  record types (a TopicNameStrategy subject holds one type, or a union of all of them);
- **the published schema is self-contained** (:func:`schemas.catalog.schema_json`: named types
  inlined, docs and defaults kept), so it needs no schema references and a client in any
  language can compile it;
- every call has a timeout and is not retried here: the caller decides what a registry that
  does not answer means (the intake: :mod:`agents.schema_ids`).

Registering is idempotent: a schema the subject already holds (the same JSON) keeps its id, so
running it again registers nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from schemas.catalog import CATALOG, Catalog

__all__ = [
    "RegisteredSchema",
    "RegistryError",
    "RegistryUnavailableError",
    "SchemaRegistry",
    "UnknownSchemaIdError",
    "subject_for",
]

MAX_REFERENCES = 64
"""The most schema references one writer schema may bring."""
NOT_FOUND_CODES = frozenset({40403, 40401, 404})
"""Confluent error codes for "no such schema / subject"."""


class RegistryError(RuntimeError):
    """The registry refused a call (its error code and message are in the text)."""


class RegistryUnavailableError(RegistryError):
    """The registry did not answer (connection refused, timeout, 5xx)."""


class UnknownSchemaIdError(RegistryError):
    """The registry answered that it has no schema with this id."""


@dataclass(frozen=True, slots=True)
class RegisteredSchema:
    """One record type as the registry holds it."""

    name: str
    subject: str
    schema_id: int


def subject_for(full_name: str) -> str:
    """The RecordNameStrategy subject of a record type: its full name."""
    return full_name


class SchemaRegistry:
    """A registry at ``url`` (``http://host:port``, or Apicurio's ``.../apis/ccompat/v7``)."""

    def __init__(self, url: str, timeout_s: float = 5.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"schema registry URL {url!r} must start with http:// or https://")
        self.url = url.rstrip("/")
        self._client = SchemaRegistryClient({
            "url": self.url, "timeout": timeout_s, "max.retries": 0,
            "cache.capacity": 1000,
        })

    def register_all(self, catalog: Catalog = CATALOG) -> list[RegisteredSchema]:
        """Publish every current record type; the ids the registry gave them."""
        out = []
        for entry in catalog.entries():
            text = entry.json
            subject = subject_for(entry.full_name)
            schema_id = self.lookup(subject, text)
            if schema_id is None:
                schema_id = self._call(
                    lambda text=text, subject=subject: self._client.register_schema(
                        subject, Schema(text, "AVRO")))
            out.append(RegisteredSchema(entry.name, subject_for(entry.full_name), schema_id))
        return out

    def lookup(self, subject: str, text: str) -> int | None:
        """The id of the version of ``subject`` whose schema is ``text`` (as JSON), or ``None``.

        Compared here, version by version, newest first, rather than with the registry's own
        look-up (``POST /subjects/<subject>``): Apicurio 2.4 does not always find a schema it
        holds that way, and then registering again would add a version each time.
        """
        wanted = json.loads(text)
        try:
            versions = self._call(lambda: self._client.get_versions(subject))
        except UnknownSchemaIdError:
            return None
        for version in sorted(versions, reverse=True):
            found = self._call(lambda v=version: self._client.get_version(subject, v))
            if json.loads(found.schema.schema_str) == wanted:
                return int(found.schema_id)
        return None

    def schema_text(self, schema_id: int) -> str:
        """The writer schema (JSON text) registered under ``schema_id``."""
        return self.schema_with_references(schema_id)[0]

    def schema_with_references(self, schema_id: int) -> tuple[str, dict[str, str]]:
        """The writer schema of ``schema_id`` and the types it references, by full name.

        References (a registry's ``references``: name, subject, version) are fetched, and
        theirs in turn, at most :data:`MAX_REFERENCES` of them.
        """
        schema = self._call(lambda: self._client.get_schema(schema_id))
        if schema.schema_type not in (None, "AVRO"):
            raise RegistryError(f"schema id {schema_id} is a {schema.schema_type} schema, "
                                "not Avro")
        named: dict[str, str] = {}
        pending = list(schema.references or [])
        while pending:
            ref = pending.pop()
            if ref.name in named:
                continue
            if len(named) >= MAX_REFERENCES:
                raise RegistryError(f"schema id {schema_id} has more than {MAX_REFERENCES} "
                                    "schema references")
            found = self._call(lambda r=ref: self._client.get_version(r.subject, r.version))
            named[ref.name] = str(found.schema.schema_str)
            pending.extend(found.schema.references or [])
        return str(schema.schema_str), named

    def _call(self, call: Any) -> Any:
        try:
            return call()
        except SchemaRegistryError as exc:
            code = exc.error_code
            if code in NOT_FOUND_CODES or exc.http_status_code == 404:
                raise UnknownSchemaIdError(f"{self.url}: {exc.error_message} "
                                      f"(error {code})") from exc
            if exc.http_status_code >= 500 or exc.http_status_code < 0:
                raise RegistryUnavailableError(f"{self.url}: {exc.error_message} "
                                          f"(HTTP {exc.http_status_code})") from exc
            raise RegistryError(f"{self.url}: {exc.error_message} (error {code})") from exc
        except (OSError, ValueError) as exc:  # httpx's errors are OSError-free: see below
            raise RegistryUnavailableError(f"{self.url}: {type(exc).__name__}: {exc}") from exc
        except Exception as exc:
            if type(exc).__module__.startswith("httpx"):
                raise RegistryUnavailableError(f"{self.url}: {type(exc).__name__}: {exc}") from exc
            raise
