"""``sluice sacctmgr show``: the associations, accounts, users and QOS of the configuration in
force, in sacctmgr's words; every change refused with what to do instead."""

from __future__ import annotations

import pytest

from cli.main import main
from cli.sacctmgr_cmd import _columns, _parse, entity_rows, sacctmgr_lines
from scheduler.config.cluster import parse_config

CONFIG = parse_config("""\
ClusterName: gpu1
Operators: [olga]
Administrators: [ada]
QOS:
  - Name: normal
  - Name: high
    Priority: 100
    MaxWall: 2-0
    MaxJobsPerUser: 4
    GrpTRES: cpu=64
    UsageFactor: 2
Accounts:
  - Name: physics
    Fairshare: 40
    Users: [alice, bob]
    GrpJobs: 10
    MaxWall: 1-0
    MaxTRESPerJob: cpu=32,gres/gpu=4
  - Name: theory
    Parent: physics
    Users: [alice]
    MaxTRESPerJob: cpu=8
  - Name: bio
    Users: [carol]
""")


def _show(*words: str) -> list[dict[str, str]]:
    _, _, entity, filters, _ = _parse(["show", *words])
    return entity_rows(entity, CONFIG, filters)


def test_associations_in_tree_order_with_own_grp_and_inherited_max_limits() -> None:
    rows = _show("assoc")
    assert [(r["Account"], r["User"]) for r in rows] == [
        ("root", ""), ("bio", ""), ("bio", "carol"), ("physics", ""), ("physics", "alice"),
        ("physics", "bob"), ("theory", ""), ("theory", "alice")]
    physics, theory_alice = rows[3], rows[7]
    assert (physics["Cluster"], physics["Share"], physics["GrpJobs"], physics["MaxWall"],
            physics["MaxTRES"]) == ("gpu1", "40", "10", "1-00:00:00", "cpu=32,gres/gpu=4")
    # theory's own cpu=8 wins, gres/gpu and MaxWall come from physics; no Grp limit of its own
    assert (theory_alice["MaxTRES"], theory_alice["MaxWall"], theory_alice["GrpJobs"],
            theory_alice["Share"]) == ("cpu=8,gres/gpu=4", "1-00:00:00", "", "1")
    # no QOS list on the path: Slurm's default association list, normal alone
    assert physics["QOS"] == "normal" and physics["Def QOS"] == "normal"


def test_filters_as_sacctmgrs_where_clause() -> None:
    assert [(r["Account"], r["User"]) for r in _show("assoc", "where", "user=alice")] == [
        ("physics", "alice"), ("theory", "alice")]
    assert [(r["Account"], r["User"]) for r in _show("assoc", "Accounts=bio")] == [
        ("bio", ""), ("bio", "carol")]
    assert [r["User"] for r in _show("users")] == ["alice", "bob", "carol", "root"]
    assert _show("user", "alice")[0] == {"User": "alice", "Def Acct": "physics",
                                          "Admin": "None"}
    assert [r["Account"] for r in _show("account", "name=bio,theory")] == ["bio", "theory"]
    assert [r["Name"] for r in _show("qos", "high")] == ["high"]


def test_users_admin_levels_and_qos_limits() -> None:
    config = parse_config("Operators: [olga]\nAdministrators: [ada]\nAccounts:\n"
                          "  - Name: a\n    Users: [olga, ada, x]\n")
    _, _, entity, filters, _ = _parse(["show", "user"])
    admin = {r["User"]: r["Admin"] for r in entity_rows(entity, config, filters)}
    assert admin == {"ada": "Administrator", "olga": "Operator", "root": "Administrator",
                     "x": "None"}
    high = _show("qos", "high")[0]
    assert (high["Priority"], high["MaxWall"], high["MaxJobsPU"], high["GrpTRES"],
            high["UsageFactor"]) == ("100", "2-00:00:00", "4", "cpu=64", "2.000000")


def test_parsable_noheader_and_format_as_scripts_use_them() -> None:
    _, _, entity, filters, fields = _parse(["show", "assoc", "where", "user=bob",
                                            "format=account,user,maxwall%12"])
    lines = sacctmgr_lines(entity_rows(entity, CONFIG, filters), _columns(entity, fields),
                           header=False, delimiter="|")
    assert lines == ["physics|bob|1-00:00:00"]  # sacctmgr -nP show assoc ... format=...
    table = sacctmgr_lines(entity_rows(entity, CONFIG, filters), _columns(entity, fields))
    assert [len(cell) for cell in table[1].split()] == [10, 10, 12]
    assert table[2].split() == ["physics", "bob", "1-00:00:00"]


def test_changes_and_bad_calls_are_errors_not_tracebacks(capsys: pytest.CaptureFixture[str],
                                                         ) -> None:
    assert main(["sacctmgr", "add", "user", "dave", "account=bio"]) == 1
    assert "sluice config apply FILE" in capsys.readouterr().err
    assert main(["sacctmgr", "show", "clusterz"]) == 1
    assert "show what?" in capsys.readouterr().err
    assert main(["sacctmgr", "show", "assoc", "format=Nope"]) == 1
    assert "Unknown field 'Nope'" in capsys.readouterr().err


def test_an_accounts_qos_list_is_its_associations_qos_inherited_by_its_children() -> None:
    config = parse_config("QOS:\n  - Name: normal\n  - Name: high\nAccounts:\n"
                          "  - Name: physics\n    Users: [alice]\n    QOS: [normal]\n"
                          "  - Name: theory\n    Parent: physics\n    Users: [bob]\n"
                          "  - Name: bio\n    Users: [carol]\n")
    _, _, entity, filters, _ = _parse(["show", "assoc"])
    qos = {(r["Account"], r["User"]): r["QOS"] for r in entity_rows(entity, config, filters)}
    assert (qos["physics", "alice"], qos["theory", "bob"], qos["bio", "carol"]) == (
        "normal", "normal", "normal")  # bio: no list on its path, Slurm's default
