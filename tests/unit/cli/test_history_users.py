"""Whose jobs ``sluice history`` (sacct) lists without ``-a``: sacct's rules
(``src/sacct/options.c``): root's sacct lists every user's jobs, and so does any user's
``sacct -j IDS`` (a job named is shown whoever owns it); otherwise the caller's own."""

from __future__ import annotations

from cli.history_cmd import history_user


def test_root_and_a_job_list_see_every_users_jobs_as_sacct() -> None:
    assert history_user(allusers=False, users="", jobs="", uid=0, me="root") == ""
    assert history_user(allusers=False, users="", jobs="7", uid=1001, me="alice") == ""


def test_otherwise_the_caller_or_the_users_named() -> None:
    assert history_user(allusers=False, users="", jobs="", uid=1001, me="alice") == "alice"
    assert history_user(allusers=False, users="bob", jobs="7", uid=0, me="root") == "bob"
    assert history_user(allusers=True, users="", jobs="", uid=1001, me="alice") == ""
