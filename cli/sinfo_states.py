"""sinfo's ``-t/--states``: a comma list of node states, each a prefix of a state's long or
compact name in any case (``id`` is idle, ``alloc`` allocated), ``~`` or ``!`` before one for
"not", ``+`` or ``&`` between them for "all of" and ``all`` alone for every node. A word that
names no state is refused as sinfo refuses it (``Bad state string``, then the valid states;
exit 1), before anything is asked of the system.

Slurm looks a word up in its base states first (unknown, down, idle, allocated, mixed, future),
then the DRAIN family, then its state flags; the first match wins, so ``d`` is down and ``dr``
drain. A flag no Sluice node is ever in (``cloud``, ``power_down``, ...) is a valid word that
matches no node."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["StateFilter", "parse_states"]

_BASE = (("unknown", "unk", {"unknown"}), ("down", "down", {"down"}),
         ("idle", "idle", {"idle"}), ("allocated", "alloc", {"allocated"}),
         ("mixed", "mix", {"mixed"}), ("future", "futr", {"future"}))
_DRAIN = (("drain", "drain", {"drained", "draining"}), ("drained", "drain", {"drained"}),
          ("draining", "drng", {"draining"}))
_Word = tuple[str, str, set[str]]
"""(long name, compact name, the Sluice long states it keeps; ``*``: not responding)."""
_FLAGS: tuple[_Word, ...] = (
    ("blocked", "block", set()), ("cloud", "cloud", set()),
    ("completing", "comp", {"completing"}), ("dynamic_future", "dynamic_future", set()),
    ("dynamic_norm", "dynamic_norm", set()), ("external", "external", set()),
    ("invalid_reg", "inval", set()), ("fail", "fail", {"fail", "failing"}),
    ("maintenance", "maint", {"maint"}), ("power_down", "power_down", set()),
    ("power_up", "power_up", set()), ("powered_down", "powered_down", set()),
    ("reboot_requested", "reboot_requested", set()),
    ("reboot_issued", "reboot_issued", set()), ("reserved", "resv", {"reserved"}),
    ("not_responding", "not_responding", {"*"}), ("planned", "plnd", set()),
    ("powering_up", "powering_up", set()), ("powering_down", "powering_down", set()),
    ("no_respond", "no_respond", {"*"}))
_ORDER = (*_BASE, *_DRAIN, *_FLAGS)
VALID = ",".join(dict.fromkeys(name for name, _compact, _shown in _ORDER
                               if name != "no_respond"))
"""sinfo's list of valid states, as its error prints it."""


class StateFilter:
    """Which sinfo lines ``-t`` keeps, by their long state (``drained``, ``mixed*``...)."""

    def __init__(self, wanted: list[set[str]], negated: list[set[str]], every: bool) -> None:
        self.wanted, self.negated, self.every = wanted, negated, every

    def keeps(self, line: Mapping[str, str]) -> bool:
        long = line["state_long"]
        names = {long.rstrip("*~#"), *(["*"] if long.endswith("*") else [])}
        if not (self.wanted or self.negated):
            return True
        hits = [bool(names & w) for w in self.wanted] + [not names & n for n in self.negated]
        return all(hits) if self.every else any(hits)


def _lookup(word: str) -> set[str] | None:
    low = word.lower()
    for name, compact, shown in _ORDER:
        if name.startswith(low) or compact.startswith(low):
            return shown
    return None


def parse_states(text: str) -> StateFilter | None:
    """``-t``'s filter (None: every node); ValueError ``Bad state string: "WORD"`` for a word
    that names no state."""
    if not text or text.lower() == "all":
        return None
    wanted: list[set[str]] = []
    negated: list[set[str]] = []
    for word in filter(None, text.replace("&", ",").replace("+", ",").split(",")):
        negate = word[0] in "~!"
        found = _lookup(word[1:] if negate else word)
        if found is None or not word.lstrip("~!"):
            raise ValueError(f'Bad state string: "{word[1:] if negate else word}"')
        (negated if negate else wanted).append(found)
    return StateFilter(wanted, negated, "+" in text or "&" in text)
