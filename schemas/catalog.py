"""The schema catalog: every record of the wire contract, loaded once at import.

What happens at import, in order:

1. every ``schemas/<Name>.avsc`` is loaded with :func:`fastavro.schema.load_schema` through
   :class:`SchemaDirectoryRepository`, which inlines each nested named type (``sluice.JobSpec``,
   ``sluice.Segment``) at its first use;
2. the parsed schema is reduced to its Parsing Canonical Form (PCF), and the PCF's CRC-64-AVRO
   fingerprint (8 bytes, little-endian, as Java's ``SchemaNormalization`` returns it) becomes the
   type's identity on the wire;
3. every frozen release under ``schemas/released/<version>/`` is loaded the same way, so records
   written with an older version of a schema can still be recognised and resolved.

File naming: the contract asks for ``schemas/<Name>.avsc`` (``SubmitJob.avsc``) with full name
``sluice.<Name>``. fastavro's default ``FlatDictRepository`` would look a referenced type up as
``<full name>.avsc`` (``sluice.JobSpec.avsc``), so the catalog passes its own repository that
strips the ``sluice.`` namespace instead. Use :func:`load_avsc` (never bare ``parse_schema``) to
load a schema anywhere else: a schema parsed by name has a PCF with bare references and
therefore a wrong fingerprint.

Two JSON forms are published per type:

- :func:`canonical_json` -- the PCF, exactly the bytes the fingerprint is computed over. It has no
  docs and no defaults, so it is for checking fingerprints, not for reading;
- :func:`schema_json` -- the self-contained schema with docs and defaults (named types inlined),
  which is what another language should compile and use as its reader schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastavro.repository.base import AbstractSchemaRepository, SchemaRepositoryError
from fastavro.schema import fingerprint as _fastavro_fingerprint
from fastavro.schema import load_schema, to_parsing_canonical_form

__all__ = [
    "CATALOG",
    "FINGERPRINT_SIZE",
    "NAMED_TYPES",
    "NAMESPACE",
    "RECORD_NAMES",
    "RELEASED_DIR",
    "SCHEMA_DIR",
    "Catalog",
    "SchemaDirectoryRepository",
    "SchemaEntry",
    "canonical_json",
    "crc64_avro",
    "fingerprint",
    "load_avsc",
    "name_for_fingerprint",
    "parsed_schema",
    "schema",
    "schema_json",
]

NAMESPACE = "sluice"
FINGERPRINT_SIZE = 8
SCHEMA_DIR = Path(__file__).resolve().parent
RELEASED_DIR = SCHEMA_DIR / "released"
NAMED_ROLE = "type"
"""The ``sluice.role`` of a named type that only occurs nested inside records (docs/records.md)."""

_RELEASE_DIR_NAME = re.compile(r"^v(\d+)$")


class SchemaDirectoryRepository(AbstractSchemaRepository):
    """A fastavro schema repository that finds ``sluice.<Name>`` in ``<directory>/<Name>.avsc``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def load(self, name: str) -> Any:
        """Return the raw JSON of the type called ``name`` (full or short name)."""
        short = name.removeprefix(NAMESPACE + ".")
        path = self.directory / f"{short}.avsc"
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except OSError as error:
            raise SchemaRepositoryError(f"no schema file {path} for {name!r}") from error
        except json.JSONDecodeError as error:
            raise SchemaRepositoryError(f"{path} is not valid JSON: {error}") from error


def load_avsc(directory: Path, name: str) -> dict[str, Any]:
    """Load ``<directory>/<name>.avsc`` parsed for fastavro, with nested named types inlined."""
    parsed = load_schema(f"{NAMESPACE}.{name}", repo=SchemaDirectoryRepository(directory))
    if not isinstance(parsed, dict):
        raise TypeError(f"{directory / name}.avsc does not hold a named type")
    return parsed


def crc64_avro(canonical: str) -> bytes:
    """The CRC-64-AVRO (Rabin) fingerprint of a canonical form: 8 bytes, little-endian."""
    return bytes.fromhex(_fastavro_fingerprint(canonical, "CRC-64-AVRO"))


def _plain(value: Any) -> Any:
    """A deep copy of a fastavro-parsed schema without its private ``__fastavro_*`` markers."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items() if not k.startswith("__")}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class SchemaEntry:
    """One version of one named type, as loaded from a ``.avsc`` file."""

    name: str
    """Short name, e.g. ``SubmitJob``."""
    full_name: str
    """Full Avro name, e.g. ``sluice.SubmitJob``."""
    release: str | None
    """``None`` for the current schema, else the frozen release it comes from (``v1``)."""
    parsed: dict[str, Any]
    """The schema parsed by fastavro (pass it to ``schemaless_writer``/``schemaless_reader``)."""
    canonical: str
    """Parsing Canonical Form, the input of the fingerprint."""
    fingerprint: bytes
    """CRC-64-AVRO of ``canonical``, 8 bytes little-endian."""
    json: str
    """Self-contained schema JSON with docs and defaults, for other languages."""

    @classmethod
    def load(cls, directory: Path, name: str, release: str | None) -> SchemaEntry:
        """Load ``<directory>/<name>.avsc`` and compute its canonical form and fingerprint."""
        parsed = load_avsc(directory, name)
        canonical = to_parsing_canonical_form(parsed)
        full_name = f"{NAMESPACE}.{name}"
        if parsed.get("name") != full_name:
            defined = parsed.get("name")
            raise ValueError(f"{directory / name}.avsc defines {defined!r}, not {full_name}")
        return cls(
            name=name,
            full_name=full_name,
            release=release,
            parsed=parsed,
            canonical=canonical,
            fingerprint=crc64_avro(canonical),
            json=json.dumps(_plain(parsed), indent=2),
        )


def _names_in(directory: Path) -> list[str]:
    return sorted(path.stem for path in directory.glob("*.avsc"))


def _release_dirs(released_dir: Path | None) -> list[tuple[str, Path]]:
    """Release folders ``v1``, ``v2``… ordered by version number, oldest first."""
    if released_dir is None or not released_dir.is_dir():
        return []
    found = []
    for path in released_dir.iterdir():
        match = _RELEASE_DIR_NAME.match(path.name)
        if match and path.is_dir():
            found.append((int(match.group(1)), path.name, path))
    return [(name, path) for _, name, path in sorted(found)]


def _raw_role(directory: Path, name: str) -> Any:
    """The ``sluice.role`` of ``<directory>/<name>.avsc``, read without parsing the schema."""
    try:
        return json.loads((directory / f"{name}.avsc").read_text(encoding="utf-8")).get(
            "sluice.role")
    except (OSError, json.JSONDecodeError, AttributeError):
        return None  # SchemaEntry.load names the problem when the schema is first used


class Catalog:
    """The current schemas of one directory, plus every frozen release found beside them.

    Lookups by fingerprint cover the current schemas first and then the releases (newest
    first), so a fingerprint shared by the current and a released version is the current one.

    Entries are loaded when first asked for: a process that only encodes a ``SubmitJob`` (the
    ``sluice submit`` CLI) parses that schema and its nested types, not the whole catalog
    and every release (which costs a CLI call about 0.1 s). The first lookup by fingerprint,
    or :meth:`entries`, loads everything.
    """

    def __init__(self, schema_dir: Path = SCHEMA_DIR, released_dir: Path | None = RELEASED_DIR):
        self.schema_dir = schema_dir
        self._released_dir = released_dir
        self.names: tuple[str, ...] = tuple(_names_in(schema_dir))
        """Every named type, records and nested types, sorted."""
        if not self.names:
            raise ValueError(f"no .avsc files in {schema_dir}")
        self._current: dict[str, SchemaEntry] = {}
        self._releases: dict[str, dict[str, SchemaEntry]] | None = None
        self._fingerprints: dict[bytes, SchemaEntry] | None = None
        self.named_types: tuple[str, ...] = tuple(
            n for n in self.names if _raw_role(schema_dir, n) == NAMED_ROLE
        )
        """The named types nested in records (role ``type``): catalogued, never sent alone."""
        self.record_names: tuple[str, ...] = tuple(
            n for n in self.names if n not in self.named_types
        )
        """The records that travel on their own (everything but the nested named types)."""

    @property
    def releases(self) -> dict[str, dict[str, SchemaEntry]]:
        """Every frozen release: version (``v1``…, oldest first) → name → entry."""
        if self._releases is None:
            self._releases = {
                release: {name: SchemaEntry.load(path, name, release) for name in _names_in(path)}
                for release, path in _release_dirs(self._released_dir)
            }
        return self._releases

    @property
    def _by_fingerprint(self) -> dict[bytes, SchemaEntry]:
        if self._fingerprints is None:
            found: dict[bytes, SchemaEntry] = {}
            for entries in reversed(list(self.releases.values())):
                for entry in entries.values():
                    found[entry.fingerprint] = entry
            for entry in self.entries():
                found[entry.fingerprint] = entry
            self._fingerprints = found
        return self._fingerprints

    def entry(self, name: str) -> SchemaEntry:
        """The current version of ``name`` (short or full name); ``ValueError`` if unknown."""
        short = name.removeprefix(NAMESPACE + ".")
        entry = self._current.get(short)
        if entry is None:
            if short not in self.names:
                raise ValueError(f"unknown record name {name!r}")
            entry = self._current[short] = SchemaEntry.load(self.schema_dir, short, None)
        return entry

    def entries(self) -> tuple[SchemaEntry, ...]:
        """The current version of every named type, sorted by name."""
        return tuple(self.entry(name) for name in self.names)

    def entry_for_fingerprint(self, fp: bytes) -> SchemaEntry | None:
        """The schema version (current or released) with this fingerprint, or ``None``."""
        return self._by_fingerprint.get(bytes(fp))

    def released_entries(self) -> tuple[SchemaEntry, ...]:
        """Every released schema version, oldest release first."""
        return tuple(e for entries in self.releases.values() for e in entries.values())


CATALOG = Catalog()
"""The catalog of this package's schemas, loaded at import."""

RECORD_NAMES: tuple[str, ...] = CATALOG.record_names
NAMED_TYPES: tuple[str, ...] = CATALOG.named_types
"""Named types that only occur nested inside records; they are catalogued but not sent alone."""


def schema(name: str) -> dict[str, Any]:
    """The self-contained schema of ``name`` as a JSON object (docs, defaults, types inlined)."""
    result: dict[str, Any] = json.loads(CATALOG.entry(name).json)
    return result


def parsed_schema(name: str) -> dict[str, Any]:
    """The schema of ``name`` parsed for fastavro (shared; do not modify)."""
    return CATALOG.entry(name).parsed


def schema_json(name: str) -> str:
    """The self-contained schema of ``name`` as JSON text, to publish to other languages."""
    return CATALOG.entry(name).json


def canonical_json(name: str) -> str:
    """The Parsing Canonical Form of ``name``: the exact text its fingerprint is computed over."""
    return CATALOG.entry(name).canonical


def fingerprint(name: str) -> bytes:
    """The 8-byte little-endian CRC-64-AVRO fingerprint of the current schema of ``name``."""
    return CATALOG.entry(name).fingerprint


def name_for_fingerprint(fp: bytes) -> str | None:
    """The record name of a current or released fingerprint, or ``None`` if unknown."""
    entry = CATALOG.entry_for_fingerprint(fp)
    return None if entry is None else entry.name


def main(argv: list[str] | None = None) -> None:
    """``python -m schemas.catalog [--canonical] [NAME…]``: publish schemas to other languages.

    Without names, prints every type with its fingerprint; with names, prints each one's
    self-contained schema JSON (or its canonical form with ``--canonical``).
    """
    import argparse  # noqa: PLC0415 - only the command line needs it

    parser = argparse.ArgumentParser(prog="python -m schemas.catalog", description=main.__doc__)
    parser.add_argument("names", nargs="*", help="record or named type, e.g. SubmitJob")
    parser.add_argument("--canonical", action="store_true", help="print the canonical form")
    args = parser.parse_args(argv)
    if not args.names:
        for entry in CATALOG.entries():
            kind = "named type" if entry.name in CATALOG.named_types else "record"
            print(f"{entry.fingerprint.hex()}  {entry.full_name:28} {kind}")
        return
    for name in args.names:
        print(canonical_json(name) if args.canonical else schema_json(name))


if __name__ == "__main__":
    main()
