"""``sluice config apply``: a cluster file that would switch authentication off is refused
unless it says so (``AuthRequired: false``) — a careless admin's cluster.yaml (or an empty file)
used to turn ``sluice up``'s ``AuthRequired`` off without a word, and every request without a
credential was then accepted as the user it names."""

from __future__ import annotations

import pytest

from cli.admin import auth_off_refusal


@pytest.mark.parametrize("text", ["", "Partitions:\n  - PartitionName: gpu\n    Nodes: ALL\n",
                                  "# nothing\n"])
def test_a_cluster_file_silent_about_auth_is_refused_when_the_client_authenticates(
        text: str) -> None:
    refusal = auth_off_refusal(text, "cluster", "munge")
    assert refusal is not None and "AuthRequired" in refusal


@pytest.mark.parametrize(("text", "kind", "auth"), [
    ("AuthRequired: true\n", "cluster", "munge"),
    ("AuthRequired: false\n", "cluster", "munge"),   # said on purpose
    ("", "cluster", "none"),                          # a cluster without credentials
    ("", "topology", "munge"),                        # not a cluster file
])
def test_a_file_that_keeps_or_explicitly_drops_auth_is_applied(text: str, kind: str,
                                                               auth: str) -> None:
    assert auth_off_refusal(text, kind, auth) is None
