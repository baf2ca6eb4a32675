"""The ranges a job spec must keep: what the core's arithmetic and the Avro records can hold.

:func:`spec_range_problem` is the core's admission check (``scheduler.jobs.ranges``, called by
``check_submission``), so a submission and an ``UpdateJob`` are refused alike, with a named
reason, before any number of them reaches a scheduling pass; the CLI calls the same function
on the record it is about to send. It lives with the wire contract (and imports nothing of
ours) so a client can check a spec without loading the scheduling core.

The limits (all inclusive):

- counts: ``nodes_min`` 1 … :data:`MAX_NODES`, ``nodes_max`` 0 (= the minimum) … MAX_NODES,
  ``ntasks`` and ``cpus_per_task`` ≥ 1, the CPUs one node must give (tasks per node x CPUs per
  task) ≤ :data:`MAX_CPUS_PER_NODE`, ``gpus_per_node`` 0 … :data:`MAX_GPUS_PER_NODE`,
  ``mem_per_node_mb`` 0 … :data:`MAX_MEM_MB`, ``segment`` and ``switches`` 0 … MAX_NODES;
- times: ``time_limit_s`` and ``switches_max_wait_s`` 0 … :data:`MAX_TIME_LIMIT_S` (100 years),
  ``begin_time_ms`` 0 … :data:`MAX_TIME_MS` (the end of year 9999);
- texts: :data:`MAX_SHORT_TEXT` characters for names, :data:`MAX_TEXT` for paths, comments,
  dependencies and other free text, at most :data:`MAX_LIST_ITEMS` command words or environment
  variables, a batch ``script`` of at most :data:`MAX_SCRIPT_CHARS` characters (Slurm's
  ``max_script_size``), and :data:`MAX_SPEC_CHARS` characters of text in the whole spec (a
  job's spec travels in ``JobQueued`` and in every node's ``LaunchRun``).

Anything wider than an Avro ``int`` or ``long`` is out of range by these bounds already.
Numbers are ``ValueOutOfRange``, texts and lists ``FieldTooLong``; ``nodes_min`` < 1 stays
``InvalidNodeCount`` and negative counts ``InvalidTaskCount`` (checked by admission).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from typing import Any, Final

__all__ = [
    "INT_MAX",
    "LONG_MAX",
    "MAX_CPUS_PER_NODE",
    "MAX_GPUS_PER_NODE",
    "MAX_LIST_ITEMS",
    "MAX_MEM_MB",
    "MAX_NODES",
    "MAX_SCRIPT_CHARS",
    "MAX_SEALED_SCRIPT_CHARS",
    "MAX_SHORT_TEXT",
    "MAX_SPEC_CHARS",
    "MAX_TEXT",
    "MAX_TIME_LIMIT_S",
    "MAX_TIME_MS",
    "SEALED_SCRIPT_PREFIX",
    "spec_range_problem",
    "text_problem",
]

INT_MAX: Final = 2**31 - 1
LONG_MAX: Final = 2**63 - 1
MAX_NODES: Final = 1_000_000
MAX_CPUS_PER_NODE: Final = 1_048_576
MAX_GPUS_PER_NODE: Final = 1024
MAX_MEM_MB: Final = 2**40  # 1 EiB per node
MAX_TIME_LIMIT_S: Final = 100 * 365 * 86_400
MAX_TIME_MS: Final = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z
MAX_SHORT_TEXT: Final = 1024
MAX_TEXT: Final = 65_536
MAX_LIST_ITEMS: Final = 4096
MAX_SPEC_CHARS: Final = 512 * 1024
MAX_SCRIPT_CHARS: Final = 256 * 1024
SEALED_SCRIPT_PREFIX: Final = "sealed:"
"""A script sealed to the nodes' key (``agents.auth.sealed_script``) starts so."""
MAX_SEALED_SCRIPT_CHARS: Final = 2 * MAX_SCRIPT_CHARS + 4096
"""A sealed script's length: compressed, sealed and base64 twice (4/3 x 4/3 of what zlib left,
which a script of random bytes does not shrink), with the box's own bytes."""

Problem = tuple[str, str]
"""(reason name, detail): ``ValueOutOfRange``, ``FieldTooLong`` or ``InvalidTaskCount``."""
OUT_OF_RANGE: Final = "ValueOutOfRange"
TOO_LONG: Final = "FieldTooLong"
INVALID_TASKS: Final = "InvalidTaskCount"

_SHORT = ("name", "user", "account", "partition", "qos", "gpu_type", "requeue", "hot_swap",
          "array", "submit_host")
_LONG = ("workdir", "output", "error", "dependency", "licenses", "resources", "comment")
# fields added later: a record from an older client may lack them (their defaults apply)
_LATER_SHORT = ("signal", "mail_type", "mail_user")
_LATER_LONG = ("constraint", "nodelist", "exclude")
# (field, low, high); the counts' lower bounds that have their own reason are admission's.
_NUMBERS: tuple[tuple[str, int, int], ...] = (
    ("nodes_min", -INT_MAX - 1, MAX_NODES),
    ("nodes_max", -INT_MAX - 1, MAX_NODES),
    ("ntasks", -INT_MAX - 1, MAX_NODES * MAX_CPUS_PER_NODE),
    ("cpus_per_task", -INT_MAX - 1, MAX_CPUS_PER_NODE),
    ("gpus_per_node", -INT_MAX - 1, MAX_GPUS_PER_NODE),
    ("mem_per_node_mb", -LONG_MAX - 1, MAX_MEM_MB),
    ("time_limit_s", -LONG_MAX - 1, MAX_TIME_LIMIT_S),
    ("begin_time_ms", -LONG_MAX - 1, MAX_TIME_MS),
    ("nice", -INT_MAX - 1, INT_MAX),
    ("segment", 0, MAX_NODES),
    ("switches", 0, MAX_NODES),
    ("switches_max_wait_s", 0, MAX_TIME_LIMIT_S),
)
_LATER_NUMBERS: tuple[tuple[str, int, int], ...] = (
    ("gpus", 0, MAX_GPUS_PER_NODE * MAX_NODES),
    ("ntasks_per_node", 0, MAX_CPUS_PER_NODE),
    ("mem_per_cpu_mb", 0, MAX_MEM_MB),
)


def text_problem(field: str, text: str, limit: int) -> Problem | None:
    """``FieldTooLong`` when ``text`` has more than ``limit`` characters."""
    if len(text) > limit:
        return TOO_LONG, f"{field} has {len(text)} characters, at most {limit}"
    return None


def spec_range_problem(spec: Mapping[str, Any] | Any) -> Problem | None:
    """The first range ``spec`` breaks (see the module docstring), or None; ``spec`` is a
    JobSpec record (a mapping) or an object with the JobSpec fields as attributes."""
    get = _getter(spec)
    for name, low, high in _NUMBERS + _LATER_NUMBERS:
        value = get(name)
        if not isinstance(value, int) or not low <= value <= high:
            bound = f"at most {high}" if isinstance(value, int) and value > high else (
                f"at least {low}")
            return OUT_OF_RANGE, f"{name} {value} is out of range ({bound})"
    ntasks, cpus_per_task = get("ntasks"), get("cpus_per_task")
    if min(ntasks, cpus_per_task) < 1:
        return INVALID_TASKS, f"ntasks {ntasks}, cpus_per_task {cpus_per_task}"
    per_node = -(-ntasks // max(get("nodes_min"), 1)) * cpus_per_task
    if per_node > MAX_CPUS_PER_NODE:
        return OUT_OF_RANGE, (
            f"{per_node} CPUs per node (tasks per node x cpus_per_task), at most "
            f"{MAX_CPUS_PER_NODE}"
        )
    return _texts_problem(get)


def _getter(spec: Mapping[str, Any] | Any) -> Any:
    """Field by name; a later field an older record lacks reads as its default."""
    def get(name: str) -> Any:
        if isinstance(spec, Mapping):
            return spec[name] if name in spec else _LATER_DEFAULTS[name]
        return getattr(spec, name, _LATER_DEFAULTS.get(name))
    return get


_LATER_DEFAULTS: dict[str, Any] = {
    **dict.fromkeys(_LATER_SHORT + _LATER_LONG, ""),
    **{name: 0 for name, _, _ in _LATER_NUMBERS},
}


def _texts_problem(get: Any) -> Problem | None:
    total = 0
    for names, limit in ((_SHORT + _LATER_SHORT, MAX_SHORT_TEXT),
                         (_LONG + _LATER_LONG, MAX_TEXT)):
        for name in names:
            text = str(get(name))
            problem = text_problem(name, text, limit)
            if problem is not None:
                return problem
            total += len(text)
    script = str(get("script"))
    problem = text_problem("script", script, MAX_SEALED_SCRIPT_CHARS if script.startswith(
        SEALED_SCRIPT_PREFIX) else MAX_SCRIPT_CHARS)
    if problem is not None:
        return problem
    total += len(script)
    env: Mapping[str, str] = get("env")
    for name, items in (("command", tuple(get("command"))),
                        ("env", tuple(k + v for k, v in env.items()))):
        if len(items) > MAX_LIST_ITEMS:
            return TOO_LONG, f"{name} has {len(items)} items, at most {MAX_LIST_ITEMS}"
        total += sum(len(item) for item in items)
    with contextlib.suppress(KeyError, AttributeError):  # sealed --export values: their size
        total += len(get("sealed_env") or "")
    if total > MAX_SPEC_CHARS:
        return TOO_LONG, f"the spec has {total} characters, at most {MAX_SPEC_CHARS}"
    return None
