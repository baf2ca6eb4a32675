"""``python -m infra.image build|info``: the Sluice image from a shell."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from infra.image import ImageBuildError, build, built, default_archive


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m infra.image",
                                     description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    for verb, text in (("build", "build the image (base layer from the cache when unchanged)"),
                       ("info", "what the last build wrote (exit 1: nothing built)")):
        v = verbs.add_parser(verb, help=text)
        v.add_argument("--out", type=Path, default=None,
                       help=f"the OCI archive (default: {default_archive()})")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one verb; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        if args.verb == "build":
            result = build(args.out)
            print(f"push: skopeo copy oci-archive:{result.archive} "
                  f"docker://REGISTRY/{result.name}")
            return 0
        record = built(args.out)
        if record is None:
            print(f"no image at {args.out or default_archive()}", file=sys.stderr)
            return 1
        print(json.dumps(asdict(record), indent=1))
    except ImageBuildError as exc:
        print(f"infra.image: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
