"""``/metrics/jobs-users-accts`` has series for at most ``MAX_LABELLED`` users or accounts.

Without accounting an account is any text a user writes: red team, 2026-12-07, 2,300 made-up
accounts of 1 kB grew the page to 70 MB (69,120 series), each scrape holding the views for
0.45 s, so every other user's squeue and sbatch waited seconds. The accounts with the most jobs
keep their series; the others' jobs are summed under ``(other)``, nothing lost from the
totals; a label value is at most 128 characters."""

from __future__ import annotations

from projections import slurm_metrics
from projections.slurm_metrics import MAX_LABELLED, OTHER, users_accounts_families
from projections.views import Views
from tests.unit.projections.ledger_builder import LedgerBuilder
from tests.unit.projections.test_projection_metrics import samples


def _views(accounts: list[str]) -> Views:
    b = LedgerBuilder()
    b.node("n1", cpus=8)
    for account in accounts:
        b.queued(user="alice", account=account)
    views = Views()
    for name, record in b.facts:
        views.apply(name, record)
    return views


def test_made_up_accounts_beyond_the_bound_are_summed_under_other() -> None:
    busy = ["physics"] * 5 + ["chem"] * 3
    made_up = [f"x{i:04d}" + "z" * 1000 for i in range(MAX_LABELLED + 200)]
    got = samples(users_accounts_families(_views(busy + made_up)))
    pending = {k: v for k, v in got.items() if k.startswith("slurm_account_jobs_pending{")}
    assert len(pending) == MAX_LABELLED
    assert pending['slurm_account_jobs_pending{account="physics"}'] == 5
    assert pending['slurm_account_jobs_pending{account="chem"}'] == 3
    assert sum(pending.values()) == len(busy) + len(made_up)  # every job still counted
    assert f'slurm_account_jobs_pending{{account="{OTHER}"}}' in pending
    assert max(len(k) for k in pending) < 200  # 1 kB names cut to 128 characters


def test_below_the_bound_every_account_has_its_series() -> None:
    got = samples(users_accounts_families(_views(["a", "b", "b"])))
    assert got['slurm_account_jobs_pending{account="a"}'] == 1
    assert got['slurm_account_jobs_pending{account="b"}'] == 2
    assert not any(OTHER in k for k in got)
    assert slurm_metrics.MAX_LABELLED >= 100
