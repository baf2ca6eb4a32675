"""``scontrol create|update|delete reservation``, ``show reservation`` and ``sinfo -T``:
the words parsed into a ``CreateReservation``, and Slurm's output shapes."""

from __future__ import annotations

import argparse

import pytest

from cli import reservations_cmd as resv
from cli.nodes_cmd import _values, add_node_options
from cli.show_cmd import node_lines

T0 = 1_767_225_600_000
ROW = {"name": "maint", "start_ms": T0, "end_ms": T0 + 5_400_000, "nodes": ["n1", "n2", "n3"],
       "users": ["root", "olga"], "accounts": [], "flags": ["MAINT", "IGNORE_JOBS"]}


def test_create_words_become_a_record_with_relative_times() -> None:
    record = resv._record(["ReservationName=maint", "StartTime=now+10minutes",
                           "Duration=1:30:00", "Nodes=n[1-3]", "Users=root,olga",
                           "Flags=MAINT,IGNORE_JOBS"], update=False)
    assert record["name"] == "maint" and record["start_in_s"] == 600
    assert record["duration_s"] == 5400 and record["nodes"] == "n[1-3]"
    assert record["users"] == ["root", "olga"]
    assert record["flags"] == ["MAINT", "IGNORE_JOBS"] and record["update"] is False
    now = resv._record(["starttime=now", "endtime=now+2hours", "nodecnt=2",
                        "accounts=physics"], update=False)
    assert (now["start_in_s"], now["end_in_s"], now["node_cnt"]) == (0, 7200, 2)
    assert now["accounts"] == ["physics"]
    absolute = resv._record(["StartTime=2030-01-02T03:04:05", "Duration=60"], update=False)
    assert absolute["start_ms"] > 1_893_000_000_000 and absolute["duration_s"] == 3600


@pytest.mark.parametrize("words", [
    ["PartitionName=gpu"], ["Users+=bob"], ["Users=-bob"], ["NodeCnt=two"],
    ["StartTime=now+3fortnights"], ["Nodes"],
])
def test_what_is_not_built_is_refused_before_sending(words: list[str]) -> None:
    with pytest.raises(ValueError):
        resv._record(["ReservationName=x", *words], update=False)


def test_an_unlimited_duration_is_a_year_as_slurmctld_makes_it() -> None:
    for word in ("Duration=UNLIMITED", "duration=infinite"):
        assert resv._record(["ReservationName=x", word], update=False)["duration_s"] == (
            365 * 86_400)


def test_an_update_must_name_its_reservation() -> None:
    with pytest.raises(ValueError, match="ReservationName"):
        resv._record(["Duration=60"], update=True)


def test_show_reservation_prints_scontrols_lines() -> None:
    lines = resv.reservation_lines(ROW, {"n1": 8, "n2": 8, "n3": 4}, T0 + 1)
    assert lines[0].startswith("ReservationName=maint StartTime=")
    assert lines[0].endswith("Duration=01:30:00")
    assert lines[1] == ("   Nodes=n[1-3] NodeCnt=3 CoreCnt=20 Features=(null) "
                        "PartitionName=(null) Flags=MAINT,IGNORE_JOBS")
    assert lines[2] == "   TRES=cpu=20"
    assert "Users=root,olga" in lines[3] and "State=ACTIVE" in lines[3]
    assert "State=INACTIVE" in resv.reservation_lines(ROW, {}, T0 + 5_400_000)[3]


def test_active_marks_and_the_node_states_shown() -> None:
    other = {**ROW, "name": "o", "flags": [], "nodes": ["n3", "n4"]}
    marks = resv.active_marks([ROW, other], T0)
    assert marks == {"n1": "MAINT", "n2": "MAINT", "n3": "MAINT", "n4": "RESERVED"}
    assert resv.active_marks([ROW], T0 - 1) == {}
    part = {"name": "main", "default": True}
    assert _values({"name": "n1", "state": "IDLE", "resv": "MAINT"}, part)["state"] == "maint"
    assert _values({"name": "n4", "state": "IDLE", "resv": "RESERVED"}, part)["state"] == "resv"
    assert _values({"name": "n4", "state": "MIXED", "resv": "RESERVED"}, part)["state"] == "mix"
    assert _values({"name": "n5", "state": "DOWN", "resv": "MAINT"}, part)["state"] == "down"
    shown = node_lines({"name": "n1", "state": "IDLE", "resv": "MAINT"})
    assert any("State=IDLE+MAINT " in line for line in shown)


def test_sinfo_t_upper_is_an_option_and_prints_one_line_per_reservation(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    parser = argparse.ArgumentParser(add_help=False)
    add_node_options(parser)
    assert parser.parse_args(["-T"]).reservation is True
    monkeypatch.setattr(resv, "Client", lambda settings: None)
    monkeypatch.setattr(resv, "reservation_rows", lambda client: [ROW])
    monkeypatch.setattr(resv.time, "time", lambda: (T0 + 1000) / 1000)
    resv.sinfo_reservations(None)  # type: ignore[arg-type]
    header, line = capsys.readouterr().out.splitlines()
    assert header.split() == ["RESV_NAME", "STATE", "START_TIME", "END_TIME", "DURATION",
                              "NODELIST"]
    assert line.split()[0:2] == ["maint", "ACTIVE"]
    assert line.split()[4:] == ["01:30:00", "n[1-3]"]


def test_an_update_adds_to_and_removes_from_the_lists_the_views_show() -> None:
    record = resv._record(["ReservationName=maint", "Users+=bob,root", "Accounts-=x",
                           "Flags-=maint"], update=True)
    edits = record.pop("edits")
    row = {**ROW, "accounts": ["x", "physics"]}
    resv._apply_edits(record, edits, row)
    assert record["users"] == ["root", "olga", "bob"]  # once each, in order
    assert record["accounts"] == ["physics"] and record["flags"] == ["IGNORE_JOBS"]
    with pytest.raises(ValueError, match="leave no user"):
        resv._apply_edits({}, [("users", "-", ["root", "olga"])], ROW)
    with pytest.raises(ValueError, match="Users-=bob: not in"):
        resv._apply_edits({}, [("users", "-", ["bob"])], ROW)
    flagged = {"flags": []}
    resv._apply_edits(flagged, [("flags", "+", ["no_hold_jobs_after"])], ROW)
    assert flagged["flags"] == ["MAINT", "IGNORE_JOBS", "NO_HOLD_JOBS_AFTER_END"]
    with pytest.raises(ValueError, match="Requested reservation is invalid"):
        resv._apply_edits({}, [("users", "+", ["bob"])], None)
    with pytest.raises(ValueError, match="name what"):
        resv._record(["ReservationName=maint", "Users+="], update=True)


class _Client:
    """The views' client as a reservation command uses it: what it sends is encoded (as the
    real client does) and kept; no refusal comes."""

    class sluids:  # noqa: N801 -- Client.sluids
        @staticmethod
        def new() -> str:
            return "s00000000000R9"

    def __init__(self, sent: list[dict[str, object]]) -> None:
        self.sent = sent

    def send(self, sluid: str, name: str, record: dict[str, object]) -> None:
        from schemas.writer import encode

        encode(name, {**record, "request_sluid": sluid})
        self.sent.append(record)

    def await_decision(self, *args: object, **kw: object) -> None:
        return None


def test_an_edit_sends_the_whole_list(monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    sent: list[dict[str, object]] = []
    monkeypatch.setattr(resv, "Client", lambda settings: _Client(sent))
    monkeypatch.setattr(resv, "reservation_rows", lambda client: [ROW])
    assert resv.change_reservation(["ReservationName=maint", "Users-=olga"], None,  # type: ignore[arg-type]
                                   update=True) == 0
    assert sent[0]["users"] == ["root"] and "edits" not in sent[0]
    assert capsys.readouterr().out == "Reservation updated.\n"
    assert resv.change_reservation(["ReservationName=nope", "Users+=bob"], None,  # type: ignore[arg-type]
                                   update=True) == 1
    assert "Requested reservation is invalid" in capsys.readouterr().err and len(sent) == 1


def test_a_create_without_a_name_is_sent_and_shows_the_name_the_shard_chose(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """It failed before sending: ``CreateReservation.name: required field is missing``."""
    from schemas.writer import encode

    words = ["StartTime=now+1hour", "Duration=10", "Nodes=node01", "Users=alice"]
    record = resv._record(words, update=False)
    assert record["name"] == ""
    assert encode("CreateReservation", {**record, "request_sluid": "s00000000000R9"})
    sent: list[dict[str, object]] = []
    shard_made = {**ROW, "name": "root_1", "request_sluid": "s00000000000R9"}
    monkeypatch.setattr(resv, "Client", lambda settings: _Client(sent))
    monkeypatch.setattr(resv, "reservation_rows", lambda client: [ROW, shard_made])
    assert resv.change_reservation(words, None, update=False) == 0  # type: ignore[arg-type]
    assert sent[0]["name"] == ""
    assert capsys.readouterr().out == "Reservation created: root_1\n"
