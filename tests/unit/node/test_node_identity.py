"""A daemon restarted with another credential registers under a new SLUID (agents/node/identity.py).

Seen in a fault round: node01's daemon (munge) restarted with a node JWT kept its SLUID; the
shard refused the registration (NodeIdentityChanged) while the heartbeats under that SLUID kept
the old node in service, so no DOWN ever asked the daemon to register again: the node never
returned and its job stayed RUNNING with its processes gone.
"""

from __future__ import annotations

from pathlib import Path

from agents.auth import jwt_token
from agents.node.identity import credential_of, load_or_mint_sluid, refused_is_mine
from streams.settings import Settings


def test_another_credential_mints_a_new_sluid(tmp_path: Path) -> None:
    first = load_or_mint_sluid(tmp_path, 7, "munge root")
    (tmp_path / "commands.offset").write_text("5\n")
    assert load_or_mint_sluid(tmp_path, 7, "munge root") == first  # a restart keeps it
    second = load_or_mint_sluid(tmp_path, 7, "jwt node node01")
    assert second != first
    assert not (tmp_path / "commands.offset").exists()  # read under the old SLUID
    assert load_or_mint_sluid(tmp_path, 7, "jwt node node01") == second


def test_a_state_directory_of_an_older_release_keeps_its_sluid(tmp_path: Path) -> None:
    (tmp_path / "node.sluid").write_text("s009M992N16T5Z\n")  # no node.credential yet
    assert load_or_mint_sluid(tmp_path, 7, "munge root") == "s009M992N16T5Z"
    assert load_or_mint_sluid(tmp_path, 7, "munge root") == "s009M992N16T5Z"


def test_the_credential_names_what_the_shard_records() -> None:
    base = Settings.from_env({})
    key = b"k" * 32
    node_jwt = jwt_token.issue(key, "root", 60, 1_800_000_000, node="node01")
    user_jwt = jwt_token.issue(key, "alice", 60, 1_800_000_000)
    renewed = jwt_token.issue(key, "root", 600, 1_800_000_100, node="node01")
    assert credential_of(base.with_(auth="jwt", jwt=node_jwt), "node01") == "jwt node node01"
    assert credential_of(base.with_(auth="jwt", jwt=renewed), "node01") == "jwt node node01"
    assert credential_of(base.with_(auth="jwt", jwt=user_jwt), "node01") == "jwt alice"
    assert credential_of(base.with_(auth="jwt", jwt=""), "node01") == "jwt node node01"
    assert credential_of(base.with_(auth="munge"), "node01").startswith("munge ")
    assert credential_of(base.with_(auth="none"), "node01") == "none"


def test_a_refused_registration_is_this_daemons_only_under_its_own_credential() -> None:
    # the shard names the refused identity as it records it: munge's with the host
    assert refused_is_mine("munge root@10.0.0.9", "munge root")  # moved to another host
    assert refused_is_mine("jwt node n03", "jwt node n03")
    assert not refused_is_mine("jwt node n05", "jwt node n03")  # forged with another node's JWT
    assert not refused_is_mine("munge root@10.0.0.3", "jwt node n03")
    assert not refused_is_mine("jwt node n03", "munge root")
    assert not refused_is_mine("munge alice@10.0.0.3", "munge root")
    assert not refused_is_mine("", "none")
