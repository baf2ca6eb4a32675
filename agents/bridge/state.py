"""What the bridge remembers across restarts: ``<state dir>/bridge.json``.

Node SLUIDs by node name and what each was registered with, the Sluice job of each gang and
what the gang is (kind, namespace, name), the runs in flight, the jobs it cancelled because
their gang is gone (the newest ``CANCELLED_KEPT``) and the next ``node-commands`` offset of each
partition. Handlers mark it changed (:meth:`touch`); the bridge's loop writes it atomically
(:meth:`save`) once per pass, after flushing the requests that pass produced, so the file never
says a request was sent that the broker does not hold.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from agents.bridge.slots import Run

__all__ = ["CANCELLED_KEPT", "BridgeState"]

CANCELLED_KEPT = 1024


@dataclass(slots=True)
class BridgeState:
    """The bridge's saved state."""

    path: Path
    nodes: dict[str, str] = field(default_factory=dict)  # node name → node SLUID
    gangs: dict[str, str] = field(default_factory=dict)  # gang key → job SLUID
    runs: dict[str, Run] = field(default_factory=dict)  # run SLUID → run
    offsets: dict[int, int] = field(default_factory=dict)  # node-commands partition → next
    topology_digest: str = ""
    refs: dict[str, list[str]] = field(default_factory=dict)  # gang key → [kind, ns, name]
    cancelled: dict[str, str] = field(default_factory=dict)  # job SLUID → its gone gang's key
    registered: dict[str, str] = field(default_factory=dict)  # node name → its registration
    dirty: bool = False

    @classmethod
    def load(cls, folder: Path) -> BridgeState:
        """The state in ``folder`` (empty when there is none)."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "bridge.json"
        if not path.exists():
            return cls(path)
        data = json.loads(path.read_text())
        return cls(path, dict(data["nodes"]), dict(data["gangs"]),
                   {k: Run.from_json(v) for k, v in data["runs"].items()},
                   {int(k): int(v) for k, v in data["offsets"].items()},
                   str(data.get("topology_digest", "")),
                   {k: list(v) for k, v in data.get("refs", {}).items()},
                   dict(data.get("cancelled", {})), dict(data.get("registered", {})))

    def touch(self) -> None:
        """Mark the state changed: the loop's next :meth:`save` writes it."""
        self.dirty = True

    def forget_gang(self, key: str) -> str:
        """Forget a gone gang; its job SLUID ("" if none) is kept among the cancelled."""
        job_sluid = self.gangs.pop(key, "")
        self.refs.pop(key, None)
        if job_sluid:
            self.cancelled[job_sluid] = key
            for old in list(self.cancelled)[:-CANCELLED_KEPT]:
                del self.cancelled[old]
        self.touch()
        return job_sluid

    def save(self) -> None:
        """Write the state (a temporary file renamed over the old one)."""
        self.dirty = False
        data = {"nodes": self.nodes, "gangs": self.gangs,
                "runs": {k: r.as_json() for k, r in self.runs.items()},
                "offsets": {str(k): v for k, v in self.offsets.items()},
                "topology_digest": self.topology_digest, "refs": self.refs,
                "cancelled": self.cancelled, "registered": self.registered}
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(self.path)
