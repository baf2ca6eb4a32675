"""Text another user chose (a job name, comment, reason) shown by squeue, sinfo, sacct and
scontrol show: control characters become ``?``, so a newline keeps a row one line and a
terminal escape reaches no administrator's terminal."""

from __future__ import annotations

from cli.formats import parse_field_list, render, shown
from cli.history_cmd import SACCT_FIELDS
from cli.show_cmd import job_lines

HOSTILE = "evil\nJOBID 1 root\x1b]0;owned\x07\x1b[2J\r\x9b"


def test_a_cell_keeps_its_printable_text_and_loses_its_controls() -> None:
    assert shown(HOSTILE) == "evil?JOBID 1 root?]0;owned??[2J??"
    assert shown("héllo ✓ 日本") == "héllo ✓ 日本"


def test_a_table_row_with_a_hostile_name_is_one_line_of_printable_text() -> None:
    layout = parse_field_list("JobID,JobName%40", SACCT_FIELDS, "--format", "%")
    for delimiter in (None, "|"):
        lines = render([{"job_id": "7", "name": HOSTILE}], layout, delimiter=delimiter)
        assert len(lines) == 2
        assert all(line.isprintable() for line in lines), lines


def test_scontrol_show_job_prints_no_control_character() -> None:
    lines = job_lines({"job_id": 7, "name": HOSTILE, "user": "mallory", "state": "PENDING",
                       "comment": "a\rb"}, 0, "7")
    assert lines and all(line.isprintable() for line in lines), lines
