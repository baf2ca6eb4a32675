"""SLUIDs: Slurm's 64-bit, time-ordered identifiers, bit-for-bit.

Layout (most significant bit first)::

    [ 12-bit cluster id ][ 42-bit unix time in ms ][ 10-bit sequence ]

Text form: ``s`` followed by 13 upper-case Crockford Base32 characters (the first one carries
only the top 4 bits). Lexicographic order of the text equals numeric order.

Minting is split in two so that the scheduling core stays pure:

- :func:`mint` is a pure function of a :class:`SluidClock` and a time; it returns the new id and
  the next clock. The core keeps a ``SluidClock`` in its state and passes the request time in.
- :class:`SluidGenerator` wraps ``mint`` with the wall clock and a lock, for clients and daemons.

Like Slurm, a sequence that would pass 0x3FF borrows the next millisecond, so the ids of one
generator are strictly increasing even when more than 1,024 are minted in one millisecond or the
clock steps back.
"""

from __future__ import annotations

import _thread
import os
import time

from schemas.frozen_record import FrozenSlotsRecord

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from datetime import datetime

__all__ = [
    "CLUSTER_ID_MAX",
    "CLUSTER_ID_MIN",
    "SEQUENCE_MAX",
    "DecodedSluid",
    "InvalidSluidError",
    "SluidClock",
    "SluidGenerator",
    "compose",
    "decode",
    "format_sluid",
    "is_sluid",
    "mint",
    "parse_sluid",
]

CLUSTER_ID_MIN = 2  # 0 is reserved (old db_index values), 1 is slurmdbd / srun --no-allocate
CLUSTER_ID_MAX = 4094  # 4095 (0xFFF) is reserved
SEQUENCE_BITS = 10
TIME_BITS = 42
SEQUENCE_MAX = (1 << SEQUENCE_BITS) - 1
TIME_MAX = (1 << TIME_BITS) - 1

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_DECODE = {c: i for i, c in enumerate(_ALPHABET)}
_DECODE.update({c.lower(): i for c, i in list(_DECODE.items())})
_DECODE.update({"O": 0, "o": 0, "I": 1, "i": 1, "L": 1, "l": 1})
_TEXT_CHARS = 13
_PYTHON_DIGITS = "0123456789abcdefghijklmnopqrstuv"
_TO_PYTHON = str.maketrans({c: _PYTHON_DIGITS[i] for c, i in _DECODE.items()})
_DIGITS = "".join(sorted(_DECODE))
"""The characters of a SLUID after its ``s`` (a text whose rest strips to nothing is made of
them: the check ``re.fullmatch("[sS][…]{13}")`` made, without compiling a pattern in every
process that imports this module: 1.6 M instructions alone, 0.6 M of a ``sluice submit``,
whose argparse warms ``re`` anyway, issue 17)."""
_RANDOM_START = (SEQUENCE_MAX + 1) // 2
"""The sequences a generator's millisecond may start at: a power of two, so that a random one
is a mask of ``os.urandom`` bytes (``secrets.randbelow`` would import ``random``, ``bisect``
and more in every ``sluice`` call, issue 17)."""
assert _RANDOM_START & (_RANDOM_START - 1) == 0
_set = object.__setattr__


class InvalidSluidError(ValueError):
    """Raised when a text or number is not a valid SLUID."""


class DecodedSluid(FrozenSlotsRecord):
    """The three fields of a SLUID (a frozen record: schemas/frozen_record.py)."""

    __slots__ = ("cluster_id", "sequence", "unix_ms")
    __match_args__ = ("cluster_id", "unix_ms", "sequence")
    cluster_id: int
    unix_ms: int
    sequence: int

    def __init__(self, cluster_id: int, unix_ms: int, sequence: int) -> None:
        _set(self, "cluster_id", cluster_id)
        _set(self, "unix_ms", unix_ms)
        _set(self, "sequence", sequence)

    @property
    def time(self) -> datetime:
        """The millisecond the SLUID was minted in, as a UTC datetime."""
        from datetime import UTC, datetime  # noqa: PLC0415 -- not on the CLI's path

        return datetime.fromtimestamp(self.unix_ms / 1000, tz=UTC)

    def as_json(self) -> dict[str, object]:
        """The fields as ``sluice sluid decode --json`` prints them."""
        iso = self.time.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return {
            "cluster_id": self.cluster_id,
            "unix_ms": self.unix_ms,
            "sequence": self.sequence,
            "time": iso,
        }


def compose(cluster_id: int, unix_ms: int, sequence: int) -> int:
    """Pack the three fields into the 64-bit value (no range check on the cluster id)."""
    if not 0 <= cluster_id <= 0xFFF:
        raise InvalidSluidError(f"cluster id {cluster_id} does not fit in 12 bits")
    if not 0 <= unix_ms <= TIME_MAX:
        raise InvalidSluidError(f"time {unix_ms} ms does not fit in 42 bits")
    if not 0 <= sequence <= SEQUENCE_MAX:
        raise InvalidSluidError(f"sequence {sequence} does not fit in 10 bits")
    return (cluster_id << (TIME_BITS + SEQUENCE_BITS)) | (unix_ms << SEQUENCE_BITS) | sequence


def decode(value: int | str) -> DecodedSluid:
    """Split a SLUID (number or text) into cluster id, milliseconds and sequence."""
    number = parse_sluid(value) if isinstance(value, str) else value
    return DecodedSluid(
        cluster_id=number >> (TIME_BITS + SEQUENCE_BITS),
        unix_ms=(number >> SEQUENCE_BITS) & TIME_MAX,
        sequence=number & SEQUENCE_MAX,
    )


def format_sluid(number: int) -> str:
    """The text form: ``s`` + 13 Crockford Base32 characters, upper case."""
    if not 0 < number < (1 << 64):
        raise InvalidSluidError(f"{number} is not a 64-bit SLUID")
    chars = []
    for shift in range(5 * (_TEXT_CHARS - 1), -1, -5):
        chars.append(_ALPHABET[(number >> shift) & 0x1F])
    return "s" + "".join(chars)


def is_sluid(text: str) -> bool:
    """Whether ``text`` is the text form of a SLUID (as :func:`parse_sluid` accepts it)."""
    try:
        parse_sluid(text)
    except InvalidSluidError:
        return False
    return True


def parse_sluid(text: str) -> int:
    """Parse the text form; accepts ``s``/``S``, lower case, and Crockford's O→0, I/L→1."""
    number = _PARSED.get(text, 0)  # (a submission's SLUID is read several times)
    if number:
        return number
    well_formed = len(text) == _TEXT_CHARS + 1 and text[0] in "sS" and not text[1:].strip(_DIGITS)
    number = _parsed(text) if well_formed else 0
    if number:
        if len(_PARSED) >= 4096:
            _PARSED.clear()
        _PARSED[text] = number
        return number
    if len(text) != _TEXT_CHARS + 1 or text[0] not in "sS":
        raise InvalidSluidError(f"{text!r} is not a SLUID: expected 's' and 13 characters")
    number = 0
    for char in text[1:]:
        digit = _DECODE.get(char)
        if digit is None:
            raise InvalidSluidError(f"{text!r} is not a SLUID: {char!r} is not Crockford Base32")
        number = (number << 5) | digit
    if number >= 1 << 64:
        raise InvalidSluidError(f"{text!r} is not a SLUID: the first character must be 0-F")
    if number == 0:
        raise InvalidSluidError(f"{text!r} is not a SLUID: zero is invalid")
    return number


_PARSED: dict[str, int] = {}
"""Well-formed texts already parsed, and their numbers (a bounded memo of a pure function)."""


def _parsed(text: str) -> int:
    """A well-formed text's number, 0 when out of range (``parse_sluid`` keeps the answers)."""
    number = int(text[1:].translate(_TO_PYTHON), 32)
    return number if number < 1 << 64 else 0


class SluidClock(FrozenSlotsRecord):
    """The minting state of one generator: the last millisecond used and its sequence (a
    frozen record: schemas/frozen_record.py)."""

    __slots__ = ("cluster_id", "last_ms", "sequence")
    __match_args__ = ("cluster_id", "last_ms", "sequence")
    cluster_id: int
    last_ms: int
    sequence: int

    def __init__(self, cluster_id: int, last_ms: int = 0, sequence: int = -1) -> None:
        _set(self, "cluster_id", cluster_id)
        _set(self, "last_ms", last_ms)
        _set(self, "sequence", sequence)
        if not CLUSTER_ID_MIN <= cluster_id <= CLUSTER_ID_MAX:
            raise InvalidSluidError(
                f"cluster id {cluster_id} is outside {CLUSTER_ID_MIN}..{CLUSTER_ID_MAX}"
            )

    def after(self, sluid: int) -> SluidClock:
        """The clock that has just minted ``sluid`` (used when replaying recorded ids)."""
        fields = decode(sluid)
        if (fields.unix_ms, fields.sequence) <= (self.last_ms, self.sequence):
            return self
        return SluidClock(self.cluster_id, fields.unix_ms, fields.sequence)


def mint(clock: SluidClock, now_ms: int, first_sequence: int = 0) -> tuple[int, SluidClock]:
    """Mint the next SLUID at ``now_ms``; pure, so the same inputs give the same id.

    Within one millisecond the sequence counts up from ``first_sequence`` (Slurm: 0); past 0x3FF
    the next millisecond is borrowed. A clock that steps back keeps using the last millisecond,
    so ids never decrease.
    """
    if now_ms > clock.last_ms:
        last_ms, sequence = now_ms, first_sequence
    elif clock.sequence < SEQUENCE_MAX:
        last_ms, sequence = clock.last_ms, clock.sequence + 1
    else:
        last_ms, sequence = clock.last_ms + 1, 0
    number = compose(clock.cluster_id, last_ms, sequence)
    return number, SluidClock(clock.cluster_id, last_ms, sequence)


class SluidGenerator:
    """Thread-safe minting from the wall clock, for clients and node daemons.

    **Beyond Slurm.** Slurm mints every SLUID in one process (slurmctld). Sluice's clients mint
    their own job SLUIDs (so a resubmission is idempotent) and node daemons their node SLUIDs,
    so two processes can mint in the same millisecond. Each new millisecond therefore starts the
    sequence at a random point in its lower half (the upper half leaves room to count up before
    borrowing): two independent mints in the same millisecond collide with probability 1/512
    instead of 1. The scheduling core keeps Slurm's rule (start at 0), since it is one process
    and must be deterministic.

    1/512 is rare, not impossible (a thousand parallel ``sbatch`` calls over three seconds make a
    colliding pair likely), so a job submission also carries a nonce its client draws once:
    the shard takes the same SLUID and nonce for a redelivery and refuses another submission
    under a SLUID in use (``SluidInUse``), on which the client mints a new SLUID and submits
    again (docs/scheduling.md, "Duplicate submissions and SLUID collisions").
    """

    def __init__(self, cluster_id: int) -> None:
        self._clock = SluidClock(cluster_id)
        self._lock = _thread.allocate_lock()  # threading.Lock, without threading (issue 17)

    def new(self) -> str:
        """A new SLUID in text form."""
        return format_sluid(self.new_int())

    def new_int(self) -> int:
        """A new SLUID as a number."""
        now_ms = time.time_ns() // 1_000_000
        with self._lock:
            start = int.from_bytes(os.urandom(2), "big") & (_RANDOM_START - 1)
            number, self._clock = mint(self._clock, now_ms, start)
        return number
