"""Which shard a request goes to: the shard map from the system configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.routing import ShardRouter
from streams.settings import Settings

MAP = "partition:gpu=1,node:g=1,node:gx=2"


def _submit(partition: str) -> dict[str, object]:
    return {"spec": {"partition": partition}}


def test_the_shard_map_of_the_system_configuration_routes_partitions_and_nodes(
    tmp_path: Path,
) -> None:
    conf = tmp_path / "sluice.conf"
    conf.write_text(f"Shards=3\nShardMap={MAP}\n")
    settings = Settings.from_env({"SLUICE_CONF": str(conf), "SLUICE_HOME": str(tmp_path)})
    router = ShardRouter(settings)

    assert settings.shard_map == MAP
    assert router.shards_for("SubmitJob", _submit("gpu")) == [1]
    assert router.shards_for("SubmitJob", _submit("batch")) == [0]
    assert router.shards_for("TestSubmitJob", _submit("gpu")) == [1]  # sbatch --test-only
    assert router.shards_for("RegisterNode", {"name": "g07"}) == [1]
    assert router.shards_for("RegisterNode", {"name": "gx07"}) == [2]  # longest prefix wins
    assert router.shards_for("DrainNode", {"node_name": "n01"}) == [0]
    assert router.shards_for("CancelJob", {"job_sluid": "s0"}) == [0, 1, 2]
    assert router.shards_for("PlanStarts", {"request_sluid": "s0"}) == [0, 1, 2]  # --start


def test_the_environment_wins_over_the_configuration_file(tmp_path: Path) -> None:
    conf = tmp_path / "sluice.conf"
    conf.write_text(f"Shards=3\nShardMap={MAP}\n")
    settings = Settings.from_env({"SLUICE_CONF": str(conf), "SLUICE_HOME": str(tmp_path),
                                  "SLUICE_SHARD_MAP": "partition:gpu=2"})

    assert ShardRouter(settings).shards_for("SubmitJob", _submit("gpu")) == [2]
    assert settings.as_env()["SLUICE_SHARD_MAP"] == "partition:gpu=2"


@pytest.mark.parametrize("text", ["partition:gpu=3", "rack:r1=1", "partition:gpu=x"])
def test_a_shard_map_naming_no_shard_is_refused(tmp_path: Path, text: str) -> None:
    settings = Settings(shards=3, shard_map=text, home=tmp_path)

    with pytest.raises(ValueError, match="ShardMap"):
        ShardRouter(settings)
