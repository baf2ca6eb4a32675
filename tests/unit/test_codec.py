"""The codec: round trips of every record, defaults, errors that name the field, every decode
failure, Confluent framing, schema evolution through released versions, and fingerprints."""

from __future__ import annotations

import copy
import json
import re
import shutil
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
from fastavro import schemaless_writer
from fastavro.schema import parse_schema, to_parsing_canonical_form

from schemas import (
    NAMED_TYPES,
    RECORD_NAMES,
    Catalog,
    Codec,
    DecodeError,
    EncodeError,
    canonical_json,
    crc64_avro,
    decode,
    encode,
    fingerprint,
    name_for_fingerprint,
    parsed_schema,
    peek_name,
    schema,
    schema_json,
)
from schemas.catalog import SCHEMA_DIR
from schemas.codec import SOE_MAGIC

T0 = 1_761_955_200_000  # 2025-11-01T00:00:00Z

FULL_SPEC: dict[str, Any] = {
    "name": "llama-finetune",
    "user": "alice",
    "account": "ml-research",
    "partition": "gpu",
    "qos": "high",
    "nodes_min": 4,
    "nodes_max": 8,
    "ntasks": 32,
    "cpus_per_task": 12,
    "gpus_per_node": 8,
    "gpu_type": "h100",
    "mem_per_node_mb": 1_536_000,
    "time_limit_s": 86_400,
    "exclusive": True,
    "command": ["torchrun", "--nnodes=4", "train.py", "--cfg=7b.yaml"],
    "workdir": "/home/alice/llama",
    "env": {"NCCL_DEBUG": "WARN", "WANDB_PROJECT": "llama"},
    "sealed_env": "",
    "output": "/home/alice/logs/%x-%j.out",
    "error": "/home/alice/logs/%x-%j.err",
    "requeue": "expedite",
    "begin_time_ms": T0 + 3_600_000,
    "dependency": "afterok:1041:1040,singleton",
    "nice": -5,
    "hold": True,
    "array": "0-15%4",
    "licenses": "matlab:2",
    "resources": "power:400",
    "segment": 2,
    "spread_segments": True,
    "consolidate_segments": False,
    "exclusive_topo": True,
    "switches": 2,
    "switches_max_wait_s": 600,
    "hot_swap": "yes",
    "comment": "sweep 3/8 — ünïcode ok",
    "script": "#!/bin/bash\n#SBATCH -N 4\nsrun torchrun train.py\n",
    "submit_host": "login-1",
    "gpus": 32,
    "ntasks_per_node": 8,
    "mem_per_cpu_mb": 4096,
    "constraint": "h100&ib|a100",
    "nodelist": "gpu[001-004]",
    "exclude": "gpu007",
    "signal": "B:USR1@120",
    "mail_type": "END,FAIL",
    "mail_user": "alice@example.org",
    "reservation": "maint-dec",
    "admin_comment": "checked by ops",
    "extra": "project=lattice",
    "kill_on_invalid_dep": True,
}

JOB_SPEC_DEFAULTS: dict[str, Any] = {
    "name": "",
    "account": "",
    "partition": "",
    "qos": "",
    "nodes_min": 1,
    "nodes_max": 0,
    "ntasks": 1,
    "cpus_per_task": 1,
    "gpus_per_node": 0,
    "gpu_type": "",
    "mem_per_node_mb": 0,
    "time_limit_s": 0,
    "exclusive": False,
    "command": [],
    "workdir": "",
    "env": {},
    "sealed_env": "",
    "output": "",
    "error": "",
    "requeue": "",
    "begin_time_ms": 0,
    "dependency": "",
    "nice": 0,
    "hold": False,
    "array": "",
    "licenses": "",
    "resources": "",
    "segment": 0,
    "spread_segments": False,
    "consolidate_segments": False,
    "exclusive_topo": False,
    "switches": 0,
    "switches_max_wait_s": 0,
    "hot_swap": "",
    "comment": "",
    "script": "",
    "submit_host": "",
    "gpus": 0,
    "ntasks_per_node": 0,
    "mem_per_cpu_mb": 0,
    "constraint": "",
    "nodelist": "",
    "exclude": "",
    "signal": "",
    "mail_type": "",
    "mail_user": "",
    "reservation": "",
    "admin_comment": "",
    "extra": "",
    "kill_on_invalid_dep": False,
}

JOB = "s14DK8YBDF0000"
RUN = "s14DK8YBDF0041"
NODE = "s14DK0000A0001"
FACT = {"event_sluid": "s14DK8YBDF0042", "shard": "gpu", "shard_seq": 123_456, "time_ms": T0}
SEGMENTS = [
    {"index": 0, "group": "block-a", "nodes": ["gpu-a001", "gpu-a002"]},
    {"index": 1, "group": "block-b", "nodes": ["gpu-b001", "gpu-b002"]},
]
NODES = ["gpu-a001", "gpu-a002", "gpu-b001", "gpu-b002"]

REALISTIC: dict[str, dict[str, Any]] = {
    "SubmitJob": {"job_sluid": JOB, "spec": FULL_SPEC, "submitter": "portal",
                  "nonce": 0x7FFF_FFFF_FFFF_FFFF},
    "TestSubmitJob": {"job_sluid": JOB, "spec": FULL_SPEC, "submitter": "",
                      "nonce": 0x1234_5678_9ABC_DEF0},
    "PlanStarts": {"request_sluid": JOB, "user": "alice", "nonce": 0x0FED_CBA9_8765_4321},
    "PlanPriorities": {"request_sluid": JOB, "user": "alice", "nonce": 0x0FED_CBA9_8765_4321},
    "PlanShares": {"request_sluid": JOB, "user": "alice", "nonce": 0x0FED_CBA9_8765_4321},
    "CreateReservation": {
        "request_sluid": JOB, "name": "maint-dec", "update": False, "start_ms": 0,
        "start_in_s": 3_600, "end_ms": 0, "end_in_s": -1, "duration_s": 7_200,
        "nodes": "gpu-a[001-002]", "node_cnt": 0, "users": ["alice", "bob"],
        "accounts": ["physics"], "flags": ["MAINT", "IGNORE_JOBS"], "user": "olga",
        "by": "", "nonce": 0x0123_4567_89AB_CDEF,
    },
    "DeleteReservation": {"request_sluid": JOB, "name": "maint-dec", "user": "olga", "by": "",
                          "nonce": 0x0123_4567_89AB_CDEF},
    "CancelJob": {"job_sluid": JOB, "user": "alice", "reason": "wrong config", "signal": 10,
                  "signal_scope": "BATCH", "step_sluid": ""},
    "HoldJob": {"job_sluid": JOB, "user": "root", "admin": True},
    "ReleaseJob": {"job_sluid": JOB, "user": "root"},
    "UpdateJob": {"job_sluid": JOB, "user": "alice", "changes": {"time_limit_s": "7200"}},
    "RegisterNode": {
        "node_sluid": NODE,
        "name": "gpu-a001",
        "cpus": 96,
        "mem_mb": 2_048_000,
        "gpus": 8,
        "gpu_type": "h100",
        "features": ["ib", "nvlink"],
        "boot_ms": T0 - 86_400_000,
        "registrant": "",
    },
    "ReportJobExit": {
        "job_sluid": JOB,
        "run_sluid": RUN,
        "node_sluid": NODE,
        "node_name": "gpu-a001",
        "exit_code": 137,
        "signal": 9,
        "detail": "OOM killed",
        "epilog_done": False,
        "fenced": False,
    },
    "ApplyConfig": {
        "config_sluid": "s14DK8YBDF0100",
        "kind": "topology",
        "text": "topology:\n  kind: block\n",
        "source": "/etc/sluice/topology.yaml",
    },
    "ReportProlog": {"job_sluid": JOB, "run_sluid": RUN, "node_sluid": NODE,
                     "node_name": "gpu-a001", "ok": True, "exit_code": 0, "detail": ""},
    "ReportEpilog": {"job_sluid": JOB, "run_sluid": RUN, "node_sluid": NODE,
                     "node_name": "gpu-a001", "ok": False, "exit_code": 3,
                     "detail": "epilog exited 3: nvidia-smi reports an XID error"},
    "DrainNode": {"name": "gpu-a001", "reason": "bad DIMM", "down": False, "user": "",
                  "by": "olga"},
    "ResumeNode": {"name": "gpu-a001", "user": "root"},
    "RequeueJob": {"job_sluid": JOB, "user": "root", "hold": True},
    "Tick": {"shard": "gpu", "time_ms": T0},
    "NodeFailed": {
        "node_sluid": NODE,
        "name": "gpu-a001",
        "reason": "heartbeat lost",
        "time_ms": T0,
        "silent_nodes": 1,
        "watched_nodes": 64,
    },
    "NodeClockAhead": {"node_sluid": NODE, "name": "gpu-a001", "ahead_ms": 400_000,
                       "time_ms": T0},
    "NodeResponding": {"node_sluid": NODE, "name": "gpu-a001", "runs": [RUN], "time_ms": T0,
                       "sent_ms": T0 - 40, "exited": [RUN], "answers": False,
                       "paused": "no space left on device"},
    "NodeHeartbeat": {"node_sluid": NODE, "name": "gpu-a001", "time_ms": T0, "runs": [RUN],
                      "exited": [], "paused": "read-only file system"},
    "JobQueued": {
        **FACT,
        "job_sluid": JOB,
        "job_id": 1042,
        "spec": FULL_SPEC,
        "array_job_sluid": "s14DK8YBDE0000",
        "array_task_id": 3,
        "partition": "gpu",
        "qos": "high",
        "account": "ml",
        "time_limit_s": 86_400,
        "requeue": "expedite",
        "cpus_per_node": 96,
        "submitter": "portal",
        "nonce": 0x1234_5678_9ABC_DEF0,
    },
    "JobRejected": {
        **FACT,
        "job_sluid": JOB,
        "reason": "InvalidNodeCount",
        "detail": "nodes_min 9 > 8 nodes in partition gpu",
        "retryable": False,
        "nonce": -1,
    },
    "JobTestAnswered": {
        **FACT,
        "job_sluid": JOB,
        "nonce": 0x1234_5678_9ABC_DEF0,
        "user": "alice",
        "job_id": 1_048_577,
        "start_ms": 1_796_527_800_000,
        "nodes": "gpu-a[001-002,017]",
        "cpus": 288,
        "partition": "gpu",
        "reason": "",
        "detail": "",
    },
    "StartsPlanned": {
        **FACT,
        "request_sluid": JOB,
        "nonce": 0x0FED_CBA9_8765_4321,
        "user": "alice",
        "reuses": "",
        "pending": 48_211,
        "job_sluids": [JOB, RUN, "s14DK8YBDF0043"],
        "job_ids": [1_048_577, 1_048_578, 1_048_590],
        "starts_ms": [T0, 1_796_527_800_000, 1_796_531_400_000],
        "nodes": ["gpu-a[001-002,017]", "gpu-b[001-064]", "gpu-a[001-128]"],
    },
    "PrioritiesComputed": {
        **FACT,
        "request_sluid": JOB,
        "nonce": 0x0FED_CBA9_8765_4321,
        "user": "alice",
        "reuses": "",
        "weights": {"age": 1000, "fairshare": 10_000, "jobsize": 0, "partition": 500, "qos": 0},
        "job_sluids": [JOB, RUN],
        "job_ids": [1_048_577, 1_048_578],
        "priorities": [9_104, 100_000],
        "age": [1000, 12],
        "fairshare": [7_604, 2_500],
        "jobsize": [0, 0],
        "partition": [500, 500],
        "qos": [0, 0],
        "nice": [0, -10],
        "admin_priorities": [0, 100_000],
    },
    "SharesComputed": {
        **FACT,
        "request_sluid": JOB,
        "nonce": 0x0FED_CBA9_8765_4321,
        "user": "alice",
        "reuses": "",
        "half_life_s": 604_800,
        "accounts": ["root", "physics", "physics"],
        "users": ["", "", "alice"],
        "depths": [0, 1, 2],
        "raw_shares": [-1, 40, 1],
        "norm_shares": [1.0, 0.4, 1.0],
        "raw_usage": [1.5e9, 4.2e8, 4.2e8],
        "norm_usage": [1.0, 0.28, 0.28],
        "effective_usage": [1.0, 0.28, 1.0],
        "level_fs": [float("inf"), 1.4285714285714286, 1.0],
        "fairshare": [-1.0, -1.0, 0.875],
    },
    "RequestDenied": {
        **FACT,
        "request": "CancelJob",
        "subject_sluid": JOB,
        "requester": "mallory",
        "reason": "InternalError",
        "detail": "OverflowError: int too large to convert",
        "nonce": -0x1234_5678_9ABC_DEF0,
    },
    "JobPending": {**FACT, "job_sluid": JOB, "reason": "Resources", "priority": 4_294_901_760},
    "JobStarted": {
        **FACT,
        "job_sluid": JOB,
        "job_id": 1042,
        "run_sluid": RUN,
        "restart_count": 1,
        "nodes": NODES,
        "node_sluids": ["s14DK0000A0001", "s14DK0000A0002", "s14DK0000B0001", "s14DK0000B0002"],
        "segments": SEGMENTS,
        "partition": "gpu",
        "user": "alice",
        "time_limit_s": 86_400,
        "submit_ms": T0 - 100_000,
        "alloc_cpus": [96, 96, 48, 48],
        "alloc_mem_mb": [2_048_000, 2_048_000, 512_000, 512_000],
        "alloc_gpus": [8, 8, 4, 4],
        "priority": 4_294_967_294,
    },
    "JobDetailsChanged": {
        **FACT,
        "job_sluid": JOB,
        "run_sluid": RUN,
        "name": "eval",
        "comment": "second pass",
        "mail_type": "END,FAIL",
        "mail_user": "alice@example.org",
        "array": "0-99%8",
        "changed": ["comment", "name", "nice", "requeue"],
        "nice": 2_147_483_645,
        "requeue": "no",
        "requester": "alice",
        "admin_comment": "checked by ops",
        "extra": "project=lattice",
    },
    "TimeLimitChanged": {
        **FACT,
        "job_sluid": JOB,
        "run_sluid": RUN,
        "nodes": NODES,
        "time_limit_s": 7_200,
        "previous_s": 3_600,
        "requester": "",
    },
    "JobPrioritySet": {
        **FACT,
        "job_sluid": JOB,
        "priority": 100_000,
    },
    "ReservationSet": {
        **FACT,
        "request_sluid": JOB,
        "name": "maint-dec",
        "created": True,
        "start_ms": T0 + 3_600_000,
        "end_ms": T0 + 10_800_000,
        "nodes": ["gpu-a001", "gpu-a002"],
        "users": ["alice", "bob"],
        "accounts": ["physics"],
        "flags": ["MAINT", "IGNORE_JOBS"],
        "by": "olga",
    },
    "ReservationDeleted": {
        **FACT,
        "request_sluid": "",
        "name": "maint-dec",
        "ended": True,
        "by": "",
    },
    "RunSignalled": {
        **FACT,
        "job_sluid": JOB,
        "run_sluid": RUN,
        "nodes": NODES,
        "signal": 10,
        "scope": "BATCH",
        "reason": "TIME_LIMIT",
        "requester": "",
        "step_sluid": "",
    },
    "RunKillRequested": {
        **FACT,
        "job_sluid": JOB,
        "run_sluid": RUN,
        "reason": "TIMEOUT",
        "nodes": NODES,
    },
    "JobEnded": {
        **FACT,
        "job_sluid": JOB,
        "job_id": 1042,
        "run_sluid": RUN,
        "state": "FAILED",
        "exit_code": 1,
        "signal": 0,
        "reason": "NonZeroExitCode",
        "job_state": "COMPLETING",
        "requeue_reason": "EXIT_NONZERO",
        "held_nodes": NODES[1:],
        "defer_release": True,
    },
    "JobHeld": {**FACT, "job_sluid": JOB, "admin": False},
    "JobReleased": {**FACT, "job_sluid": JOB},
    "JobStartNotification": {
        "event_sluid": "s14DK8YBDF0002", "job_sluid": JOB, "job_id": 4242, "run_sluid": RUN,
        "restart_count": 0, "cluster": "gpu", "user": "alice", "account": "ml",
        "partition": "gpu", "name": "train", "nodes": ["gpu-a001", "gpu-a002"],
        "segments": [{"index": 0, "group": "b1", "nodes": ["gpu-a001", "gpu-a002"]}],
        "start_ms": T0, "submit_ms": T0 - 60_000, "eligible_ms": T0 - 60_000,
        "queue_wait_s": 60, "time_limit_s": 3600, "shard": "gpu", "shard_seq": 77,
    },
    "JobExpediting": {**FACT, "job_sluid": JOB, "run_sluid": RUN, "trigger": "NODE_FAIL"},
    "NodeEpilogCompleted": {**FACT, "node_sluid": NODE, "name": "gpu-a001", "job_sluid": JOB,
                            "run_sluid": RUN, "ok": True, "detail": ""},
    "JobRequeued": {**FACT, "job_sluid": JOB, "job_id": 4242, "run_sluid": RUN,
                    "reason": "NODE_FAIL", "expedite": True, "held": False, "begin_time_ms": 0,
                    "restart_count": 1, "pending_reason": "None"},
    "NodeRegistered": {
        **FACT,
        "node_sluid": NODE,
        "name": "gpu-a001",
        "cpus": 96,
        "mem_mb": 2_048_000,
        "gpus": 8,
        "gpu_type": "h100",
        "features": ["ib"],
        "partitions": ["gpu", "all"],
        "registrant": "munge root@10.0.0.3",
    },
    "NodeStateChanged": {
        **FACT,
        "node_sluid": NODE,
        "name": "gpu-a001",
        "state": "DRAIN",
        "reason": "bad DIMM",
        "by": "olga",
    },
    "NodeSuspected": {
        **FACT,
        "node_sluid": NODE,
        "name": "gpu-a001",
        "reason": "Suspected partition: 40 of 64 nodes silent at once (no heartbeat for 10.5 s)",
        "silent_nodes": 40,
        "watched_nodes": 64,
    },
    "RunMissingNoted": {
        **FACT,
        "job_sluid": JOB,
        "run_sluid": RUN,
        "node_sluid": NODE,
        "name": "gpu-a001",
        "missing": True,
        "heartbeat_ms": T0 - 120,
    },
    "NodeCommandRefused": {
        **FACT,
        "node_sluid": NODE,
        "name": "gpu-a001",
        "command": "LaunchRun",
        "run_sluid": RUN,
        "reason": "CommandUnsigned",
        "detail": "no sluice-command-sig header",
    },
    "ReportCommandRefused": {
        "node_sluid": NODE,
        "node_name": "gpu-a001",
        "command": "LaunchRun",
        "run_sluid": RUN,
        "reason": "CommandExpired",
        "detail": "expired 12 s ago",
        "expiry_ms": T0 - 12_000,
    },
    "ConfigApplied": {
        **FACT,
        "config_sluid": "s14DK8YBDF0100",
        "kind": "cluster",
        "digest": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "text": "name: alpha\n",
        "default_partition": "gpu",
        "blocks": {"gpu-a001": "b1", "gpu-a002": "b1"},
        "private_jobs": True,
        "privileged": ["root", "slurm"],
        "partition_names": ["gpu", "debug"],
        "partition_states": ["UP", "DRAIN"],
        "partition_max_times": [86_400, 0],
        "partition_nodes": ["gpu-a[001-002]", ""],
        "partition_default_times": [3600, 0],
        "partition_max_nodes": [16, 0],
        "partition_allow_qos": ["normal,high", ""],
        "partition_priority_tiers": [10, 1],
        "partition_job_factors": [2, 1],
    },
    "CycleCompleted": {
        **FACT,
        "inbox_partition": 3,
        "inbox_from": 10_000,
        "inbox_to": 10_250,
        "pending": 812,
        "running": 96,
        "started": 4,
    },
    "LaunchRun": {
        "job_sluid": JOB,
        "job_id": 1042,
        "run_sluid": RUN,
        "node_sluid": NODE,
        "node_name": "gpu-a001",
        "batch_host": True,
        "nodes": NODES,
        "segments": SEGMENTS,
        "restart_count": 1,
        "previous_run_sluid": "s14DK8YBDF0010",
        "user": "alice",
        "partition": "gpu",
        "name": "llama-finetune",
        "command": ["torchrun", "train.py"],
        "workdir": "/home/alice/llama",
        "env": {"NCCL_DEBUG": "WARN"},
        "sealed_env": "U0xYMQ==",
        "output": "/home/alice/logs/%x-%j.out",
        "error": "",
        "time_limit_s": 86_400,
        "cpus": 96,
        "mem_mb": 1_536_000,
        "issued_ms": T0,
        "script": "#!/bin/bash\nsrun torchrun train.py\n",
        "account": "ml-research",
        "qos": "high",
        "ntasks": 32,
        "cpus_per_task": 12,
        "alloc_cpus": [96, 96, 96, 96],
        "alloc_mem_mb": [1_536_000] * 4,
        "alloc_gpus": [8, 8, 8, 8],
        "array_job_id": 1040,
        "array_task_id": 2,
        "array_task_count": 8,
        "array_task_min": 0,
        "array_task_max": 7,
        "submit_host": "login-1",
        "restart_after_ms": 120_000,
        "array_task_step": 1,
    },
    "StartStep": {
        "job_sluid": JOB,
        "run_sluid": RUN,
        "step_sluid": "s14DK8YBDF0077",
        "user": "alice",
        "nodes": ["gpu-a001", "gpu-a002"],
        "tasks_per_node": [2, 2],
        "cpus_per_task": 4,
        "command": ["python", "train.py"],
        "workdir": "/home/alice",
        "env": {"OMP_NUM_THREADS": "4"},
        "io_address": "gpu-a001:40123",
        "io_token": "9f2c",
        "input": "all",
        "exact": True,
        "overlap": False,
        "pick_nodes": True,
        "mem_per_node_mb": 16_384,
        "gpus_per_node": 2,
    },
    "StepPending": {
        **FACT,
        "job_sluid": JOB,
        "job_id": 1042,
        "run_sluid": RUN,
        "step_sluid": "s14DK8YBDF0078",
        "user": "alice",
        "nodes": ["gpu-a001"],
        "tasks_per_node": [1],
        "cpus_per_task": 4,
        "command": ["python", "eval.py"],
        "workdir": "/home/alice",
        "env": {"OMP_NUM_THREADS": "4"},
        "io_address": "gpu-a001:40124",
        "io_token": "7a1b",
        "input": "none",
        "exact": True,
        "overlap": False,
        "pick_nodes": True,
        "mem_per_node_mb": 0,
        "gpus_per_node": -1,
        "reason": "Requested nodes are busy",
    },
    "ReportStepExit": {
        "job_sluid": JOB,
        "run_sluid": RUN,
        "step_sluid": "s14DK8YBDF0077",
        "node_sluid": NODE,
        "node_name": "gpu-a002",
        "exit_code": 0,
        "signal": 9,
        "detail": "killed: NodeFenced: no heartbeat of node gpu-a002 was delivered for 7 s",
        "fenced": True,
    },
    "StepStarted": {
        **FACT,
        "job_sluid": JOB,
        "job_id": 1042,
        "run_sluid": RUN,
        "step_sluid": "s14DK8YBDF0077",
        "step_id": 0,
        "user": "alice",
        "nodes": ["gpu-a001", "gpu-a002"],
        "tasks_per_node": [2, 2],
        "cpus_per_task": 4,
        "command": ["python", "train.py"],
        "workdir": "/home/alice",
        "env": {},
        "io_address": "gpu-a001:40123",
        "io_token": "9f2c",
        "input": "all",
        "alloc_cpus": [8, 8],
        "alloc_mem_mb": [16_384, 16_384],
        "alloc_gpus": [2, 2],
        "overlap": False,
        "waited": True,
    },
    "StepTasksExited": {
        **FACT,
        "job_sluid": JOB,
        "job_id": 1042,
        "run_sluid": RUN,
        "step_sluid": "s14DK8YBDF0077",
        "step_id": 0,
        "node_name": "gpu-a002",
        "exit_code": 0,
        "signal": 0,
    },
    "StepEnded": {
        **FACT,
        "job_sluid": JOB,
        "job_id": 1042,
        "run_sluid": RUN,
        "step_sluid": "s14DK8YBDF0077",
        "step_id": 0,
        "state": "FAILED",
        "exit_code": 3,
        "signal": 0,
        "reason": "task 2 on gpu-a002 exited 3",
        "unfinished_nodes": ["gpu-a001"],
    },
    "LaunchStep": {
        "job_sluid": JOB,
        "job_id": 1042,
        "run_sluid": RUN,
        "step_sluid": "s14DK8YBDF0077",
        "step_id": 0,
        "node_sluid": NODE,
        "node_name": "gpu-a001",
        "nodes": ["gpu-a001", "gpu-a002"],
        "tasks_per_node": [2, 2],
        "cpus_per_task": 4,
        "command": ["python", "train.py"],
        "workdir": "/home/alice",
        "env": {},
        "io_address": "gpu-a001:40123",
        "io_token": "9f2c",
        "issued_ms": T0,
        "input": "pty",
        "cpus": 8,
        "gpus": 2,
        "overlap": False,
    },
    "RequestRegistration": {
        "node_sluid": NODE,
        "reason": "the cluster configuration changed",
        "issued_ms": T0,
        "holder": "node01",
        "refused": "jwt node node01",
    },
    "KillStep": {
        "job_sluid": JOB,
        "run_sluid": RUN,
        "step_sluid": "s14DK8YBDF0077",
        "step_id": 0,
        "node_sluid": NODE,
        "node_name": "gpu-a001",
        "reason": "FAILED",
        "issued_ms": T0,
    },
    "SetRunLimit": {
        "job_sluid": JOB,
        "run_sluid": RUN,
        "node_sluid": NODE,
        "node_name": "gpu-a001",
        "time_limit_s": 7_200,
        "issued_ms": T0,
    },
    "SignalRun": {
        "job_sluid": JOB,
        "run_sluid": RUN,
        "node_sluid": NODE,
        "node_name": "gpu-a001",
        "signal": 10,
        "scope": "BATCH",
        "signal_sluid": RUN,
        "issued_ms": T0,
        "step_sluid": RUN,
    },
    "KillRun": {
        "job_sluid": JOB,
        "run_sluid": RUN,
        "node_sluid": NODE,
        "node_name": "gpu-a001",
        "reason": "CANCELLED",
        "issued_ms": T0,
    },
    "DeadLetter": {
        "source_topic": "sluice.requests",
        "partition": 5,
        "offset": 9_876_543_210,
        "key": JOB.encode(),
        "value": b"\xc3\x01\x00\x01\x02\x03\x04\x05\x06\x07garbage",
        "error": "unknown fingerprint 0001020304050607",
        "time_ms": T0,
    },
}


def _defaults(name: str) -> dict[str, Any]:
    """Field -> default of the top-level fields of ``name`` that have one."""
    return {f["name"]: f["default"] for f in parsed_schema(name)["fields"] if "default" in f}


def _required(record: dict[str, Any], name: str) -> dict[str, Any]:
    """``record`` without the top-level fields that have a default."""
    return {k: v for k, v in record.items() if k not in _defaults(name)}


# -- round trips --------------------------------------------------------------------------------


def test_there_is_a_realistic_example_of_every_record() -> None:
    assert set(REALISTIC) == set(RECORD_NAMES)
    assert len(RECORD_NAMES) >= 26
    assert set(NAMED_TYPES) == {"JobSpec", "Segment"}
    assert "CloseCycle" not in RECORD_NAMES


@pytest.mark.parametrize("name", sorted(REALISTIC))
def test_every_record_round_trips_with_realistic_values(name: str) -> None:
    value = encode(name, REALISTIC[name])
    assert value[:10] == SOE_MAGIC + fingerprint(name)
    assert decode(value) == (name, REALISTIC[name])
    assert peek_name(value) == name


@pytest.mark.parametrize("name", sorted(REALISTIC))
def test_every_record_round_trips_with_only_its_required_fields(name: str) -> None:
    minimal = _required(REALISTIC[name], name)
    decoded_name, record = decode(encode(name, minimal))
    assert decoded_name == name
    assert record == {**_defaults(name), **minimal}
    assert list(record) == [f["name"] for f in parsed_schema(name)["fields"]]


def test_omitted_job_spec_fields_get_the_contract_defaults() -> None:
    _, record = decode(encode("SubmitJob", {"job_sluid": JOB, "spec": {"user": "bob"}}))
    assert record == {"job_sluid": JOB, "spec": {"user": "bob", **JOB_SPEC_DEFAULTS},
                      "submitter": "", "nonce": 0}
    assert list(record["spec"]) == [f["name"] for f in parsed_schema("JobSpec")["fields"]]


def test_omitted_request_and_fact_fields_get_their_defaults() -> None:
    _, cancel = decode(encode("CancelJob", {"job_sluid": JOB}))
    assert cancel == {"job_sluid": JOB, "user": "", "reason": "", "signal": 0, "signal_scope": "",
                      "step_sluid": ""}
    _, queued = decode(
        encode("JobQueued", {**FACT, "job_sluid": JOB, "job_id": 1, "spec": {"user": "u"}})
    )
    assert (queued["array_job_sluid"], queued["array_task_id"]) == ("", -1)
    _, started = decode(encode("JobStarted", {**REALISTIC["JobStarted"], "segments": []}))
    assert started["segments"] == []


def test_encode_accepts_the_full_name_and_tuples_for_arrays() -> None:
    record = {**REALISTIC["RunKillRequested"], "nodes": ("gpu-a001", "gpu-a002")}
    value = encode("sluice.RunKillRequested", record)
    assert decode(value) == ("RunKillRequested", {**record, "nodes": ["gpu-a001", "gpu-a002"]})


def test_dead_letter_key_may_be_null_and_bytes_may_be_a_bytearray() -> None:
    record = {**REALISTIC["DeadLetter"], "key": None, "value": bytearray(b"\x00\x01")}
    assert decode(encode("DeadLetter", record))[1] == {**record, "value": b"\x00\x01"}


def test_int_and_long_limits_round_trip() -> None:
    record = {
        **REALISTIC["CycleCompleted"],
        "inbox_partition": 2**31 - 1,
        "pending": -(2**31),
        "inbox_from": -(2**63),
        "inbox_to": 2**63 - 1,
    }
    assert decode(encode("CycleCompleted", record))[1] == record


def test_encoding_is_deterministic() -> None:
    assert encode("SubmitJob", REALISTIC["SubmitJob"]) == encode(
        "SubmitJob", copy.deepcopy(REALISTIC["SubmitJob"])
    )


# -- encode errors ------------------------------------------------------------------------------


def test_unknown_record_name_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown record name 'SubmitJobs'"):
        encode("SubmitJobs", {})
    with pytest.raises(ValueError, match="unknown record name 'CloseCycle'"):
        encode("CloseCycle", {})


def _spec(**changes: Any) -> dict[str, Any]:
    return {"job_sluid": JOB, "spec": {"user": "alice", **changes}}


@pytest.mark.parametrize(
    ("name", "record", "field", "problem"),
    [
        ("SubmitJob", {"spec": {"user": "a"}}, "SubmitJob.job_sluid", "required field is missing"),
        ("SubmitJob", {"job_sluid": JOB, "spec": {}}, "SubmitJob.spec.user", "missing"),
        ("SubmitJob", {**_spec(), "extra": 1}, "SubmitJob.extra", "unknown field"),
        (
            "SubmitJob",
            _spec(gpus_total=8),
            "SubmitJob.spec.gpus_total",
            "unknown field (not in sluice.JobSpec)",
        ),
        (
            "SubmitJob",
            {"job_sluid": 42, "spec": {"user": "a"}},
            "SubmitJob.job_sluid",
            "expected string, got int 42",
        ),
        (
            "SubmitJob",
            {"job_sluid": None, "spec": {"user": "a"}},
            "SubmitJob.job_sluid",
            "expected string",
        ),
        (
            "SubmitJob",
            {"job_sluid": b"s1", "spec": {"user": "a"}},
            "SubmitJob.job_sluid",
            "got bytes",
        ),
        (
            "SubmitJob",
            {"job_sluid": JOB, "spec": "alice"},
            "SubmitJob.spec",
            "expected a record sluice.JobSpec",
        ),
        (
            "SubmitJob",
            _spec(nodes_min="2"),
            "SubmitJob.spec.nodes_min",
            "expected int, got str '2'",
        ),
        ("SubmitJob", _spec(nodes_min=2.0), "SubmitJob.spec.nodes_min", "expected int, got float"),
        ("SubmitJob", _spec(nodes_min=True), "SubmitJob.spec.nodes_min", "expected int, got bool"),
        (
            "SubmitJob",
            _spec(nodes_min=2**31),
            "SubmitJob.spec.nodes_min",
            "does not fit in a 32-bit",
        ),
        ("SubmitJob", _spec(mem_per_node_mb=2**63), "SubmitJob.spec.mem_per_node_mb", "64-bit"),
        ("SubmitJob", _spec(exclusive="no"), "SubmitJob.spec.exclusive", "expected boolean"),
        ("SubmitJob", _spec(exclusive=1), "SubmitJob.spec.exclusive", "expected boolean, got int"),
        ("SubmitJob", _spec(command="ls -l"), "SubmitJob.spec.command", "expected an array"),
        ("SubmitJob", _spec(command={"ls"}), "SubmitJob.spec.command", "expected an array"),
        ("SubmitJob", _spec(command=["ls", 1]), "SubmitJob.spec.command[1]", "expected string"),
        ("SubmitJob", _spec(env=[("A", "1")]), "SubmitJob.spec.env", "expected a map"),
        ("SubmitJob", _spec(env={"A": 1}), "SubmitJob.spec.env['A']", "expected string, got int"),
        ("SubmitJob", _spec(env={1: "A"}), "SubmitJob.spec.env", "map keys must be strings"),
        (
            "DeadLetter",
            {**REALISTIC["DeadLetter"], "key": "k"},
            "DeadLetter.key",
            "expected one of [null, bytes]",
        ),
        (
            "DeadLetter",
            {**REALISTIC["DeadLetter"], "value": "v"},
            "DeadLetter.value",
            "expected bytes",
        ),
        (
            "JobStarted",
            {**REALISTIC["JobStarted"], "segments": [{"index": 0, "group": "g", "nodes": [3]}]},
            "JobStarted.segments[0].nodes[0]",
            "expected string",
        ),
        (
            "LaunchRun",
            {**REALISTIC["LaunchRun"], "segments": [{"index": 0, "nodes": []}]},
            "LaunchRun.segments[0].group",
            "missing",
        ),
    ],
)
def test_a_record_that_breaks_its_schema_is_refused_naming_the_field(
    name: str, record: dict[str, Any], field: str, problem: str
) -> None:
    with pytest.raises(EncodeError) as caught:
        encode(name, record)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")
    assert problem in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_a_record_must_be_a_mapping() -> None:
    with pytest.raises(EncodeError, match=r"SubmitJob: expected a record sluice\.SubmitJob"):
        encode("SubmitJob", [("job_sluid", JOB)])  # type: ignore[arg-type]


# -- decode errors ------------------------------------------------------------------------------

SUBMIT = encode("SubmitJob", REALISTIC["SubmitJob"])


UNDECODABLE: list[tuple[bytes | None, str]] = [
        (None, "no value (NoneType)"),  # a tombstone: it stopped the views' process
        (b"", "empty value"),
        (b"\x42\x00\x00", "unknown magic byte 0x42"),
        (b'{"job_sluid": 1}', "unknown magic byte 0x7b"),
        (b"\xc3\x02" + SUBMIT[2:], "unknown magic bytes 0xc3 0x02"),
        (SUBMIT[:7], "truncated single-object header: 7 bytes"),
        (
            b"\xc3\x01" + bytes.fromhex("0102030405060708") + b"\x00",
            "unknown fingerprint 0102030405060708",
        ),
        (b"\x00\x00\x00\x01", "truncated Confluent header: 4 bytes"),
        (b"\x00\x00\x00\x01\xa4\x02", "unknown Confluent schema id 420"),
        # cut inside the submitter's text (the nonce, 9 bytes, follows it; fastavro reports
        # a varint cut short as an IndexError, which the codec calls a corrupt body)
        (SUBMIT[:-10], "SubmitJob: truncated body"),
        (SUBMIT[:10], "SubmitJob: truncated body"),
        (SUBMIT + b"\x00", "SubmitJob: 1 trailing bytes after the body"),
        (SUBMIT + b"extra", "SubmitJob: 5 trailing bytes"),
        # the job SLUID (14 bytes after its length byte) with an invalid UTF-8 byte in it
        (SUBMIT[:11] + b"\xff" + SUBMIT[12:], "SubmitJob (current schema): corrupt body"),
]


@pytest.mark.parametrize(("data", "reason"), UNDECODABLE)
def test_undecodable_values_raise_decode_error_with_the_reason(data: bytes, reason: str) -> None:
    with pytest.raises(DecodeError, match="^" + _escape(reason)):
        decode(data)


@pytest.mark.parametrize("built", [False, True], ids=["first-decode", "fingerprints-known"])
def test_decode_gives_the_same_records_and_errors_before_and_after_its_fast_path(
        built: bool) -> None:
    """``decode`` looks a known single-object fingerprint up first once the fingerprints are
    built (the first decode builds them): every value decodes or fails as on the first."""
    codec = Codec()
    if built:
        codec.decode(SUBMIT)
    for data, reason in UNDECODABLE:
        with pytest.raises(DecodeError, match="^" + _escape(reason)):
            codec.decode(data)
    assert codec.decode(bytearray(SUBMIT)) == codec.decode(memoryview(SUBMIT)) == decode(SUBMIT)


def _escape(text: str) -> str:
    return re.escape(text)


def test_decode_error_is_a_value_error() -> None:
    assert issubclass(DecodeError, ValueError)


def test_peek_name_reads_only_the_header() -> None:
    assert peek_name(SUBMIT[:10]) == "SubmitJob"
    assert peek_name(SUBMIT[:9]) is None
    assert peek_name(b"") is None
    assert peek_name(b"\xc3\x01" + bytes(8)) is None
    assert peek_name(b"\x7b\x22") is None
    assert peek_name(b"\x00\x00\x00\x00\x63") is None


def test_decode_accepts_bytearray_and_memoryview() -> None:
    assert decode(bytearray(SUBMIT)) == decode(SUBMIT)
    assert decode(memoryview(SUBMIT))[0] == "SubmitJob"


# -- Confluent framing --------------------------------------------------------------------------


def _confluent(schema_id: int, body: bytes) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + body


def test_confluent_framed_values_decode_once_their_id_is_registered() -> None:
    codec = Codec()
    value = _confluent(17, SUBMIT[10:])
    assert codec.peek_name(value) is None
    with pytest.raises(DecodeError, match="unknown Confluent schema id 17"):
        codec.decode(value)
    codec.register_confluent_schema(17, "SubmitJob")
    assert codec.peek_name(value) == "SubmitJob"
    assert codec.decode(value) == ("SubmitJob", REALISTIC["SubmitJob"])
    with pytest.raises(DecodeError, match="SubmitJob: 2 trailing bytes"):
        codec.decode(value + b"\x00\x00")
    codec.unregister_confluent_schema(17)
    with pytest.raises(DecodeError, match="unknown Confluent schema id 17"):
        codec.decode(value)


def test_module_level_confluent_registry_is_shared_by_decode_and_peek_name() -> None:
    from schemas import register_confluent_schema, unregister_confluent_schema

    value = _confluent(2**32 - 1, encode("Tick", REALISTIC["Tick"])[10:])
    register_confluent_schema(2**32 - 1, "sluice.Tick")
    try:
        assert peek_name(value) == "Tick"
        assert decode(value) == ("Tick", REALISTIC["Tick"])
    finally:
        unregister_confluent_schema(2**32 - 1)


def test_confluent_writer_schema_is_resolved_to_the_current_schema() -> None:
    codec = Codec()
    old_writer = {
        "type": "record",
        "name": "CancelJob",
        "namespace": "sluice",
        "fields": [{"name": "job_sluid", "type": "string"}, {"name": "note", "type": "string"}],
    }
    codec.register_confluent_schema(3, "CancelJob", json.dumps(old_writer))
    body = BytesIO()
    schemaless_writer(body, parse_schema(old_writer), {"job_sluid": JOB, "note": "dropped"})
    assert codec.decode(_confluent(3, body.getvalue())) == (
        "CancelJob",
        {"job_sluid": JOB, "user": "", "reason": "", "signal": 0, "signal_scope": "",
         "step_sluid": ""},
    )


def test_confluent_writer_schema_may_reference_sluice_types_by_name() -> None:
    codec = Codec()
    raw = json.loads((SCHEMA_DIR / "SubmitJob.avsc").read_text())
    assert raw["fields"][1]["type"] == "sluice.JobSpec"
    codec.register_confluent_schema(4, "SubmitJob", raw)
    assert codec.decode(_confluent(4, SUBMIT[10:])) == ("SubmitJob", REALISTIC["SubmitJob"])


def test_confluent_writer_references_win_over_the_current_files() -> None:
    codec = Codec()
    raw = json.loads((SCHEMA_DIR / "SubmitJob.avsc").read_text())
    spec = json.loads((SCHEMA_DIR / "JobSpec.avsc").read_text())
    spec["fields"] = [f for f in spec["fields"] if f["name"] != "comment"]  # an older JobSpec
    codec.register_confluent_schema(5, "SubmitJob", raw, {"sluice.JobSpec": json.dumps(spec)})
    writer = parse_schema({**raw, "fields": [raw["fields"][0], {"name": "spec", "type": spec},
                                             *raw["fields"][2:]]})
    body = BytesIO()
    record = {"job_sluid": JOB, "spec": {"user": "alice", "command": ["true"]}}
    schemaless_writer(body, writer, record)

    name, decoded = codec.decode(_confluent(5, body.getvalue()))

    assert name == "SubmitJob" and decoded["spec"]["user"] == "alice"
    assert decoded["spec"]["comment"] == ""  # the reader's default for the field it lacked


def test_confluent_registration_refuses_bad_ids_names_and_foreign_schemas() -> None:
    codec = Codec()
    with pytest.raises(ValueError, match="does not fit in 4 bytes"):
        codec.register_confluent_schema(2**32, "SubmitJob")
    with pytest.raises(ValueError, match="does not fit in 4 bytes"):
        codec.register_confluent_schema(-1, "SubmitJob")
    with pytest.raises(ValueError, match="unknown record name 'Nope'"):
        codec.register_confluent_schema(1, "Nope")
    other = {"type": "record", "name": "other.Thing", "fields": []}
    with pytest.raises(ValueError, match=r"'other\.Thing', not sluice\.SubmitJob"):
        codec.register_confluent_schema(1, "SubmitJob", other)


def test_an_unresolvable_confluent_writer_fails_at_decode_with_a_decode_error() -> None:
    codec = Codec()
    writer = {
        "type": "record",
        "name": "sluice.Tick",
        "fields": [{"name": "shard", "type": "long"}],
    }
    codec.register_confluent_schema(9, "Tick", writer)
    with pytest.raises(DecodeError, match="Tick: cannot resolve the Confluent id 9 schema"):
        codec.decode(_confluent(9, b"\x02"))


# -- evolution through released schema versions -------------------------------------------------


@pytest.fixture
def older_release(tmp_path: Path) -> Catalog:
    """A catalog whose release v1 has an older JobSpec: no comment, no hot_swap, one more field."""
    release = tmp_path / "released" / "v1"
    release.mkdir(parents=True)
    shutil.copy(SCHEMA_DIR / "SubmitJob.avsc", release)
    job_spec = json.loads((SCHEMA_DIR / "JobSpec.avsc").read_text())
    job_spec["fields"] = [f for f in job_spec["fields"] if f["name"] not in ("comment", "hot_swap")]
    job_spec["fields"].append({"name": "legacy_flag", "type": "boolean", "default": False})
    (release / "JobSpec.avsc").write_text(json.dumps(job_spec))
    return Catalog(SCHEMA_DIR, tmp_path / "released")


def test_a_record_written_with_an_older_release_decodes_to_the_current_schema(
    older_release: Catalog,
) -> None:
    old = older_release.releases["v1"]["SubmitJob"]
    assert old.fingerprint != fingerprint("SubmitJob")
    spec = {k: v for k, v in FULL_SPEC.items()
            if k not in ("comment", "hot_swap", "script", "submit_host")}
    body = BytesIO()
    schemaless_writer(body, old.parsed, {"job_sluid": JOB, "spec": {**spec, "legacy_flag": True}})
    value = SOE_MAGIC + old.fingerprint + body.getvalue()

    codec = Codec(older_release)
    assert codec.peek_name(value) == "SubmitJob"
    assert older_release.entry_for_fingerprint(old.fingerprint) is old
    name, record = codec.decode(value)
    assert name == "SubmitJob"
    assert record == {"job_sluid": JOB, "spec": {**spec, "comment": "", "hot_swap": "",
                                                 "script": "", "submit_host": ""},
                      "submitter": "", "nonce": 0}
    # The module-level codec knows only the real releases, so it refuses that fingerprint.
    with pytest.raises(DecodeError, match=f"unknown fingerprint {old.fingerprint.hex()}"):
        decode(value)
    assert name_for_fingerprint(old.fingerprint) is None


def test_current_records_still_decode_without_resolution_beside_an_older_release(
    older_release: Catalog,
) -> None:
    assert Codec(older_release).decode(SUBMIT) == ("SubmitJob", REALISTIC["SubmitJob"])


def test_the_releases_are_parsed_only_at_the_first_value_of_an_older_release(
    older_release: Catalog,
) -> None:
    old = older_release.releases["v1"]["SubmitJob"]
    spec = {k: v for k, v in FULL_SPEC.items()
            if k not in ("comment", "hot_swap", "script", "submit_host")}
    body = BytesIO()
    schemaless_writer(body, old.parsed, {"job_sluid": JOB, "spec": {**spec, "legacy_flag": False}})
    value = SOE_MAGIC + old.fingerprint + body.getvalue()
    fresh = Catalog(SCHEMA_DIR, older_release._released_dir)  # no release parsed yet
    codec = Codec(fresh)
    assert codec.decode(SUBMIT) == ("SubmitJob", REALISTIC["SubmitJob"])
    assert fresh._releases is None  # current values: the releases are not read
    assert codec.decode(value)[1]["spec"]["comment"] == ""  # resolved from release v1
    assert fresh._releases is not None
    assert codec.decode(SUBMIT) == ("SubmitJob", REALISTIC["SubmitJob"])  # still the current
    assert Codec(fresh).peek_name(value) == "SubmitJob"


def test_a_corrupt_body_of_an_older_release_names_the_release(older_release: Catalog) -> None:
    old = older_release.releases["v1"]["SubmitJob"]
    value = SOE_MAGIC + old.fingerprint + b"\x1c" + b"\xff" * 14
    with pytest.raises(DecodeError, match="SubmitJob \\(release v1 schema\\): corrupt body"):
        Codec(older_release).decode(value)


# -- catalog and fingerprints -------------------------------------------------------------------


def test_crc64_avro_of_null_and_int_match_the_known_values() -> None:
    assert crc64_avro('"null"').hex() == "8a8f25cce724dd63"
    assert crc64_avro('"int"').hex() == "8f5c393f1ad57572"
    assert int.from_bytes(crc64_avro('"null"'), "little") == 7195948357588979594
    assert int.from_bytes(crc64_avro('"int"'), "little") == 8247732601305521295


def test_every_fingerprint_is_8_bytes_unique_and_maps_back_to_its_name() -> None:
    names = [*RECORD_NAMES, *NAMED_TYPES]
    fingerprints = {fingerprint(n) for n in names}
    assert len(fingerprints) == len(names)
    for name in names:
        assert len(fingerprint(name)) == 8
        assert name_for_fingerprint(fingerprint(name)) == name
        assert fingerprint(f"sluice.{name}") == fingerprint(name)
    assert name_for_fingerprint(bytes(8)) is None


@pytest.mark.parametrize("name", [*RECORD_NAMES, *NAMED_TYPES])
def test_the_published_schema_is_self_contained_and_gives_the_same_fingerprint(name: str) -> None:
    published = json.loads(schema_json(name))
    assert published == schema(name)
    assert "__fastavro_parsed" not in schema_json(name)
    reparsed = parse_schema(published)  # no named types supplied: must be self-contained
    assert to_parsing_canonical_form(reparsed) == canonical_json(name)
    assert crc64_avro(canonical_json(name)) == fingerprint(name)
    assert json.loads(canonical_json(name))["name"] == f"sluice.{name}"


def test_nested_named_types_are_inlined_once_in_the_canonical_form() -> None:
    submit = canonical_json("SubmitJob")
    assert submit.count('"name":"sluice.JobSpec"') == 1
    assert canonical_json("JobSpec") in submit
    started = canonical_json("JobStarted")
    assert started.count('"name":"sluice.Segment"') == 1
    assert '"type":"array","items":' + canonical_json("Segment") in started


def test_schema_returns_a_copy() -> None:
    schema("Tick")["fields"].clear()
    assert len(schema("Tick")["fields"]) == 2


def test_unknown_names_are_refused_by_the_catalog() -> None:
    for lookup in (schema, fingerprint, canonical_json, parsed_schema, schema_json):
        with pytest.raises(ValueError, match="unknown record name"):
            lookup("NoSuchRecord")


# -- cross-language test vectors ----------------------------------------------------------------

VECTOR_DIR = Path(__file__).resolve().parents[1] / "vectors"
VECTORS = sorted(VECTOR_DIR.rglob("*.bin"))  # release v1 at the top, v2/ for release v2


def _covers(expected: Any, actual: Any) -> bool:
    """``actual`` equals ``expected`` except for record fields added since (defaults)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        return all(k in actual and _covers(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(map(_covers, expected, actual))
    return bool(expected == actual) and type(expected) is type(actual)


def test_there_are_vectors_for_a_request_and_a_fact() -> None:
    assert {path.stem for path in VECTORS} >= {"SubmitJob", "JobStarted"}


def test_there_is_a_release_v2_vector_of_job_started_with_its_allocation() -> None:
    name, record = decode((VECTOR_DIR / "v2" / "JobStarted.bin").read_bytes())
    assert name == "JobStarted" and record["alloc_gpus"] == [8, 8]


@pytest.mark.parametrize("path", VECTORS, ids=lambda path: str(path.relative_to(VECTOR_DIR)))
def test_each_vector_still_decodes_to_its_json(path: Path) -> None:
    value = path.read_bytes()
    expected = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    name, record = decode(value)
    assert name == path.stem
    assert _covers(expected, record)
    if value[2:10] == fingerprint(name):  # written with the current schema: exact, both ways
        assert record == expected
        assert encode(name, expected) == value


@pytest.mark.parametrize("path", VECTORS, ids=lambda path: str(path.relative_to(VECTOR_DIR)))
def test_the_vector_readme_gives_each_vectors_fingerprint_and_size(path: Path) -> None:
    readme = (VECTOR_DIR / "README.md").read_text(encoding="utf-8")
    value = path.read_bytes()
    assert f"| `{path.relative_to(VECTOR_DIR)}` | `sluice.{path.stem}`" in readme
    assert f"| {len(value)} | `{value[2:10].hex()}` |" in readme


def test_the_fingerprint_table_in_docs_wire_format_is_current() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "wire-format.md").read_text("utf-8")
    table = doc.split("<!-- fingerprints:begin -->")[1].split("<!-- fingerprints:end -->")[0]
    rows = dict(re.findall(r"\| `sluice\.(\w+)` \| `([0-9a-f]{16})` \|", table))
    assert rows == {name: fingerprint(name).hex() for name in [*RECORD_NAMES, *NAMED_TYPES]}
