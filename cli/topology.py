"""``sluice topology``: discover, check and apply topology files.

- ``sluice topology discover [--ibnetdiscover FILE] [--nvlink FILE ...] [--block-sizes 18,36]
  [--labels [--scheme KEYS]] [-o FILE]`` writes topology.yaml (or Kubernetes node labels as
  JSON) from ``ibnetdiscover`` output and per-node NVLink data: ``nvidia-smi -q`` outputs (one
  file per node, named after the node, or one pdsh-prefixed file) or a CSV ``node,domain,clique``;
- ``sluice topology check FILE [--nodes HOSTLIST]`` validates a topology.yaml or topology.conf
  and prints each topology, or the file, line and reason of the first error;
- ``sluice topology apply FILE`` sends it to the cluster (``sluice config apply --kind topology``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cli.arg_parser import Parser
from scheduler.topology import TopologyConfigError, parse_topology_conf, parse_topology_yaml
from scheduler.topology.discovery import LABEL_SCHEMES, discover, discover_labels
from scheduler.topology.hostlist import expand

__all__ = ["run"]


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="sluice topology", description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    d = verbs.add_parser("discover", help="write topology.yaml from fabric and NVLink data")
    d.add_argument("--ibnetdiscover", type=Path, help="ibnetdiscover output")
    d.add_argument("--nvlink", type=Path, nargs="*", default=[],
                   help="nvidia-smi -q outputs (file name = node), a pdsh file, or a CSV")
    d.add_argument("--block-sizes", default="", help="e.g. 18,36,72")
    d.add_argument("--labels", action="store_true", help="print Kubernetes node labels instead")
    d.add_argument("--scheme", choices=LABEL_SCHEMES, default=LABEL_SCHEMES[0])
    d.add_argument("-o", "--output", type=Path)
    c = verbs.add_parser("check", help="validate a topology.yaml or topology.conf")
    c.add_argument("file", type=Path)
    c.add_argument("--nodes", default="", help="hostlist of the cluster's nodes")
    a = verbs.add_parser("apply", help="apply a topology file to the running cluster")
    a.add_argument("file")
    return parser


def _nvlink(paths: list[Path]) -> dict[str, str] | str | None:
    if not paths:
        return None
    if len(paths) == 1 and (paths[0].suffix == ".csv" or paths[0].is_file()):
        text = paths[0].read_text()
        if paths[0].suffix == ".csv" or "ClusterUUID" not in text or ":" in text.split()[0]:
            return text
    files = [p for path in paths for p in (sorted(path.iterdir()) if path.is_dir() else [path])]
    return {p.stem.removeprefix("nvidia-smi-q-"): p.read_text() for p in files}


def _discover(args: argparse.Namespace) -> int:
    fabric = args.ibnetdiscover.read_text() if args.ibnetdiscover else None
    nvlink = _nvlink(args.nvlink)
    if fabric is None and nvlink is None:
        print("sluice topology discover: give --ibnetdiscover and/or --nvlink", file=sys.stderr)
        return 2
    if args.labels:
        text = json.dumps(discover_labels(fabric, nvlink, scheme=args.scheme), indent=2) + "\n"
    else:
        sizes = [int(s) for s in args.block_sizes.split(",") if s] or None
        text = discover(fabric, nvlink, block_sizes=sizes)
    if args.output:
        args.output.write_text(text)
        print(f"wrote {args.output}")
    else:
        sys.stdout.write(text)
    return 0


def _check(args: argparse.Namespace) -> int:
    text = args.file.read_text()
    known = expand(args.nodes) if args.nodes else None
    parse = parse_topology_conf if args.file.suffix == ".conf" else parse_topology_yaml
    try:
        topologies = parse(text, filename=str(args.file), known_nodes=known)
    except TopologyConfigError as exc:
        print(f"sluice topology check: {exc}", file=sys.stderr)
        return 1
    for name in topologies.names:
        entry = topologies.get(name)
        default = " (cluster default)" if entry.cluster_default else ""
        print(f"{name}: {type(entry.config).__name__}{default}")
    return 0


def run(argv: list[str]) -> int:
    """Entry point for ``sluice topology ...`` (``argv[0]`` is ``topology``)."""
    args = _parser().parse_args(argv[1:])
    if args.verb == "discover":
        return _discover(args)
    if args.verb == "check":
        return _check(args)
    from cli.main import main

    return main(["config", "apply", args.file, "--kind", "topology"])
