"""scontrol update's MailType= and MailUser= (Slurm changes them on a running job too): the
types checked and recorded as sbatch's --mail-type records them."""

from __future__ import annotations

import pytest

from cli.job_control import update_changes


def test_mail_type_and_mail_user_are_fields_scontrol_updates() -> None:
    assert update_changes(["JobId=5", "MailType=end,fail", "MailUser=a@b"]) == (
        "5", {"mail_type": "END,FAIL", "mail_user": "a@b"})


def test_an_unknown_mail_type_is_refused_before_sending() -> None:
    with pytest.raises(ValueError, match="MailType=LUNCH"):
        update_changes(["JobId=5", "MailType=LUNCH"])
