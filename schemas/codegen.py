"""``python -m schemas.codegen [--check]``: the records' code and tables from ``schemas/*.avsc``.

The ``.avsc`` files are the only hand-written definition of a record. From them this writes, in
order:

1. ``scheduler/records/``: the record classes (one module per role), their converters to and
   from Avro-ready dicts, the record names of each role and the package's ``__init__`` (see
   :mod:`schemas.codegen_package`); generated files start with :data:`HEADER`, and a generated
   file no schema needs any more is deleted;
2. ``schemas/light_schemas.py``: the schemas of the records the light processes (the CLI, a
   node daemon) speak, for the fastavro-free :mod:`schemas.writer` and :mod:`schemas.reader`
   (see :mod:`schemas.codegen_light`);
3. the record tables of docs/records.md and the fingerprint table of docs/wire-format.md,
   between their markers (:mod:`schemas.codegen_docs`).

With ``--check`` nothing is written: it prints each file that regenerating would change and
exits 1 (0 when everything is current). A schema it cannot translate exits 2 with a
:class:`CodegenError` naming the file and field.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from schemas.catalog import Catalog
from schemas.codegen_docs import fingerprint_block, record_blocks, replace_blocks
from schemas.codegen_light import LIGHT_ROLES, light_schemas_module
from schemas.codegen_light import MODULE as LIGHT_SCHEMAS
from schemas.codegen_model import CodegenError, load_records
from schemas.codegen_package import PACKAGE, python_files
from schemas.codegen_python import HEADER

__all__ = ["HEADER", "CodegenError", "generate", "main", "stale"]

ROOT = Path(__file__).resolve().parent.parent
RECORDS_DOC = "docs/records.md"
WIRE_DOC = "docs/wire-format.md"


def generate(root: Path = ROOT) -> tuple[dict[str, str], list[str]]:
    """What the files under ``root`` should hold: (path → text, generated paths to delete)."""
    schema_dir = root / "schemas"
    records = load_records(schema_dir)
    files = python_files(records)
    catalog = Catalog(schema_dir, None)
    light = [r.name for r in records.values() if r.role in LIGHT_ROLES]
    files[LIGHT_SCHEMAS] = light_schemas_module(catalog, light)
    fingerprints = {e.name: e.fingerprint for e in catalog.entries()}
    for path, blocks in (
        (RECORDS_DOC, record_blocks(records)),
        (WIRE_DOC, fingerprint_block(fingerprints)),
    ):
        files[path] = replace_blocks((root / path).read_text(encoding="utf-8"), blocks, path)
    package = root / PACKAGE
    existing = sorted(package.glob("*.py")) if package.is_dir() else []
    orphans = [
        p.relative_to(root).as_posix()
        for p in existing
        if p.relative_to(root).as_posix() not in files
        and p.read_text(encoding="utf-8").startswith(HEADER)
    ]
    return files, orphans


def stale(root: Path = ROOT) -> list[str]:
    """The files regenerating would change, create or delete (empty when all is current)."""
    files, orphans = generate(root)
    changed = [
        path for path, text in files.items()
        if not (root / path).is_file() or (root / path).read_text(encoding="utf-8") != text
    ]
    return sorted(changed + orphans)


def write(root: Path = ROOT) -> list[str]:
    """Regenerate every file under ``root``; returns the paths written or deleted."""
    files, orphans = generate(root)
    done = []
    for path, text in files.items():
        target = root / path
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            done.append(path)
    for path in orphans:
        (root / path).unlink()
        done.append(path)
    return sorted(done)


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` only compare) every generated file; the exit status."""
    parser = argparse.ArgumentParser(prog="python -m schemas.codegen", description=__doc__)
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 and list the files that are stale")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: here)")
    args = parser.parse_args(argv)
    try:
        paths = stale(args.root) if args.check else write(args.root)
    except (CodegenError, OSError) as error:
        print(f"schemas.codegen: {error}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"{'stale' if args.check else 'wrote'}: {path}")
    if args.check and paths:
        print("schemas.codegen: generated files are stale; run `python -m schemas.codegen`",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
