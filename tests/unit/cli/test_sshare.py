"""``sluice sshare``: Slurm's Fair Tree columns, rows chosen as sshare chooses them."""

from __future__ import annotations

import pytest

from cli.main import main
from cli.sshare_cmd import field_list, selected, sshare_lines

ROWS = [
    {"account": "root", "user": "", "depth": 0, "raw_shares": -1, "norm_shares": 1.0,
     "raw_usage": 1800.4, "norm_usage": 1.0, "effective_usage": 1.0, "level_fs": None,
     "fairshare": -1.0},
    {"account": "physics", "user": "", "depth": 1, "raw_shares": 3, "norm_shares": 0.75,
     "raw_usage": 1400.0, "norm_usage": 0.7777, "effective_usage": 0.7777, "level_fs": 0.9643,
     "fairshare": -1.0},
    {"account": "physics", "user": "alice", "depth": 2, "raw_shares": 1, "norm_shares": 0.5,
     "raw_usage": 1400.0, "norm_usage": 0.7777, "effective_usage": 1.0, "level_fs": 0.5,
     "fairshare": 0.5},
    {"account": "physics", "user": "bob", "depth": 2, "raw_shares": 1, "norm_shares": 0.5,
     "raw_usage": 0.0, "norm_usage": 0.0, "effective_usage": 0.0, "level_fs": None,
     "fairshare": 1.0},
]


def test_default_columns_widths_indent_and_blanks_are_slurms() -> None:
    header, dashes, root, physics, alice = sshare_lines(
        selected(ROWS, me="alice"), field_list(
            "Account,User,RawShares,NormShares,RawUsage,EffectvUsage,FairShare"))
    assert header.split() == ["Account", "User", "RawShares", "NormShares", "RawUsage",
                              "EffectvUsage", "FairShare"]
    assert [len(d) for d in dashes.split()] == [20, 10, 10, 11, 11, 13, 10]
    assert root.split() == ["root", "1.000000", "1800", "1.000000"]  # RawShares, FairShare blank
    assert physics.startswith(" physics ") and physics.split()[-1] == "0.777700"
    assert alice.startswith("  physics") and alice.split()[1:] == [
        "alice", "1", "0.500000", "1400", "1.000000", "0.500000"]
    assert header.index("FairShare") + len("FairShare") == alice.rstrip().__len__()


def test_long_adds_norm_usage_and_level_fs_inf_for_no_usage() -> None:
    lines = sshare_lines(selected(ROWS, me="x", all_users=True), field_list(
        "Account,User,RawShares,NormShares,RawUsage,NormUsage,EffectvUsage,FairShare,LevelFS"))
    assert lines[0].split()[-2:] == ["FairShare", "LevelFS"]
    assert lines[2].split()[-1] == "1.000000"  # root: no LevelFS, its EffectvUsage last
    assert lines[-1].split()[-1] == "inf" and lines[-2].split()[-1] == "0.500000"


def test_rows_by_caller_all_users_accounts_and_users_only() -> None:
    def who(rows: list[dict[str, object]]) -> list[tuple[object, object]]:
        return [(r["account"], r["user"]) for r in rows]

    assert who(selected(ROWS, me="bob")) == [("root", ""), ("physics", ""), ("physics", "bob")]
    assert len(selected(ROWS, me="bob", all_users=True)) == 4
    assert who(selected(ROWS, me="bob", users="alice")) == [
        ("root", ""), ("physics", ""), ("physics", "alice")]
    assert who(selected(ROWS, me="bob", accounts="physics", all_users=True)) == [
        ("physics", ""), ("physics", "alice"), ("physics", "bob")]
    assert who(selected(ROWS, me="bob", users_only=True, all_users=True)) == [
        ("physics", "alice"), ("physics", "bob")]


def test_parsable_and_field_prefixes_and_widths() -> None:
    lines = sshare_lines(selected(ROWS, me="alice", users_only=True),
                         field_list("A,u,Fair%5"), delimiter="|", trailing=True)
    assert lines == ["Account|User|FairShare|", "  physics|alice|0.500000|"]
    narrow = sshare_lines(selected(ROWS, me="alice", users_only=True), field_list("Fair%5"))
    assert narrow[-1] == "0.50+ "  # cut with Slurm's + mark
    with pytest.raises(ValueError, match="Invalid field requested"):
        field_list("Account,Bogus")
    with pytest.raises(ValueError, match="Invalid field requested"):
        field_list("N")  # NormShares or NormUsage: ambiguous


def test_a_bad_format_is_an_error_not_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sshare", "-o", "Account,Bogus"]) == 1
    assert 'sshare: error: Invalid field requested: "Bogus"' in capsys.readouterr().err
