"""The processes that start often stay light: what the CLI's submit path and the node daemon
import (issue 17: interpreter start trimmed; a node daemon imports no stream processor or numpy).
Each check runs in a fresh interpreter and lists the heavy modules it found loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("numpy", "faust", "aiokafka", "yaml", "scheduler.decide", "scheduler.schedule",
         "scheduler.topology.block", "confluent_kafka", "jwt", "fastavro", "schemas.catalog",
         "http.client", "ctypes.util", "cryptography", "asyncio")
"""``confluent_kafka``: the CLI submits through the views' relay (its own producer only when it
falls back); ``jwt`` (PyJWT, with cryptography's X.509): only to sign a JWT of its own;
``fastavro`` and the catalog: the CLI writes requests with ``schemas.writer``; ``http.client``
(its email parser and ssl): the CLI speaks to the API with ``cli.api_http``; ``ctypes.util``:
libmunge is loaded by its soname. A node daemon loads librdkafka's extension alone
(``streams.kafka_native``: not the ``confluent_kafka`` package, whose serializing clients bring
asyncio), reads and writes its records with ``schemas.reader``/``schemas.writer``, and loads
``cryptography`` with the command key, at its first command."""


def loaded_after(code: str) -> list[str]:
    probe = (f"{code}\nimport json, sys\n"
             f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(("code", "needed"), [
    ("import cli.main; cli.main._parser('submit').parse_args(['submit', '--', 'true'])", []),
    ("import cli.client, cli.submit, cli.submit_file", []),
    ("import cli.main; cli.main._parser('node').parse_args(['node', '--name', 'n1'])\n"
     "import agents.node.daemon, agents.node.runs", []),
])
def test_no_heavy_module_is_imported(code: str, needed: list[str]) -> None:
    assert loaded_after(code) == needed


def test_a_submission_s_spec_and_seal_load_no_kafka_settings_and_no_cryptography(
        tmp_path: Path) -> None:
    """The seal is libsodium's (``agents.auth.sodium``): loading ``cryptography`` (with
    ``typing`` and OpenSSL's ``hashlib``) was a third of a sealed ``sluice submit``."""
    from agents.auth.node_keys import ensure_keys
    from streams.settings import Settings

    ensure_keys(Settings(home=tmp_path), command=False)
    code = ("import sys, cli.main\nfrom pathlib import Path\nfrom cli.client import Client\n"
            "from cli.export import seal_spec_env\nfrom cli.submit import build_spec\n"
            "from streams.settings import Settings\n"
            f"settings = Settings(home=Path({str(tmp_path)!r}))\n"
            "args = cli.main._parser('submit').parse_args(['submit', '--', 'true'])\n"
            "spec = seal_spec_env(build_spec(args), settings)\nClient(settings)\n"
            "assert spec['sealed_env'] and not spec['env']\n"
            "assert spec['sealed_env'].startswith('U0xYM')  # b'SLX2': libsodium's sealed box\n"
            "print(sorted(m for m in ('streams.security', 'streams.topics', 'cryptography', "
            "'typing', 'hashlib', 'threading') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


def test_a_submission_loads_no_dataclasses_and_no_socket_module(tmp_path: Path) -> None:
    """``dataclasses`` (with ``inspect``, ``ast``, ``dis``) and the ``socket`` module (its enum
    classes, ``selectors``) were ~25 % of a ``sluice submit`` (issue 17): its records are
    ``schemas.frozen_record`` classes and it speaks HTTP over ``_socket``."""
    from agents.auth.node_keys import ensure_keys
    from streams.settings import Settings

    ensure_keys(Settings(home=tmp_path), command=False)
    code = ("import sys, cli.main\nfrom pathlib import Path\nfrom cli.client import Client\n"
            "from cli.export import seal_spec_env\nfrom cli.submit import build_spec\n"
            "from streams.settings import Settings\nfrom agents.auth import munge\n"
            f"settings = Settings.from_env({{'SLUICE_HOME': {str(tmp_path)!r}}})\n"
            "args = cli.main._parser('submit').parse_args(['submit', '--', 'true'])\n"
            "spec = seal_spec_env(build_spec(args), settings)\nclient = Client(settings)\n"
            "client._encode([('s009M92ZTQJ25W', 'SubmitJob', {'job_sluid': 's009M92ZTQJ25W',"
            " 'spec': spec})])\n"
            "try:\n    client._http('GET', '/v1/jobs', {}, None, 1)\nexcept Exception:\n    pass\n"
            "print(sorted(m for m in ('dataclasses', 'inspect', 'socket', 'selectors')"
            " if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={**os.environ, "SLUICE_API": "127.0.0.1:1"})
    assert done.stdout.strip() == "[]"


def test_a_submission_without_a_seal_loads_no_typing_threading_or_hashlib(
        tmp_path: Path) -> None:
    """``typing`` (~15 M instructions), ``threading`` (~4 M) and ``hashlib`` with OpenSSL's
    libcrypto (~11 M) were ~17 % of a ``sluice submit --export=NONE`` (issue 17): the modules
    on its path import ``typing`` for the type checker only, the SLUID generator's lock is
    ``_thread``'s, and the MUNGE binding's digest is the standard library's ``_sha256``."""
    code = ("import sys, cli.main\nfrom cli.client import Client\n"
            "from cli.export import seal_spec_env\nfrom cli.submit import build_spec\n"
            "from streams.settings import Settings\nfrom agents.auth.headers import binding\n"
            f"settings = Settings.from_env({{'SLUICE_HOME': {str(tmp_path)!r}}})\n"
            "args = cli.main._parser('submit').parse_args("
            "['submit', '--export=NONE', '--', 'true'])\n"
            "spec = seal_spec_env(build_spec(args), settings)\nclient = Client(settings)\n"
            "[(_n, value, _k)] = client._encode([('s009M92ZTQJ25W', 'SubmitJob',"
            " {'job_sluid': 's009M92ZTQJ25W', 'spec': spec})])\n"
            "binding(client.sluids.new(), value)\n"
            "print(sorted(m for m in ('typing', 'threading', 'hashlib', 'cryptography')"
            " if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


def test_the_munge_binding_s_digest_is_sha256_with_or_without_cryptography(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib

    from cryptography.hazmat.primitives import hashes  # noqa: F401 - the other path first

    from agents.auth.headers import sha256_hex

    value = bytes(range(256)) * 40
    assert sha256_hex(value) == hashlib.sha256(value).hexdigest()  # by cryptography
    monkeypatch.delitem(sys.modules, "cryptography.hazmat.primitives.hashes")
    assert sha256_hex(value) == hashlib.sha256(value).hexdigest()  # by _sha256


def test_builders_is_generic_for_the_type_checker_only() -> None:
    from schemas.schema_walk import Builders

    assert Builders[int] is Builders  # a subscript at run time is the class itself
    assert "__dict__" not in dir(Builders("w", {}, None, None, None, None))  # still slotted


def test_encoding_a_submission_parses_only_its_schemas() -> None:
    code = ("from schemas import encode\nfrom schemas.catalog import CATALOG\n"
            "encode('SubmitJob', {'job_sluid': 's000000000000A',"
            " 'spec': {'user': 'u', 'command': ['true']}})\n"
            "print(','.join(sorted(CATALOG._current)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    parsed = set(done.stdout.strip().splitlines()[-1].split(","))
    assert "SubmitJob" in parsed
    assert parsed <= {"SubmitJob", "JobSpec", "Segment"}


def test_the_package_names_stay_the_core_functions_after_their_modules_load() -> None:
    import scheduler
    import scheduler.decide
    import scheduler.evolve
    import scheduler.schedule

    assert callable(scheduler.decide) and scheduler.decide.__module__ == "scheduler.decide"
    assert callable(scheduler.schedule) and callable(scheduler.evolve)
    assert "run_cycle" in dir(scheduler)
    with pytest.raises(AttributeError):
        _ = scheduler.no_such_name  # type: ignore[attr-defined]


def test_the_schemas_package_loads_a_name_s_module_when_it_is_first_used() -> None:
    code = ("import sys\nfrom schemas import SluidGenerator, ranges\n"
            "print('fastavro' in sys.modules)\nfrom schemas import decode\n"
            "print('fastavro' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["False", "True"]
    import schemas

    assert set(schemas.__all__) <= set(dir(schemas))
    assert schemas.decode_sluid is schemas.sluid.decode
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = schemas.no_such_name  # type: ignore[attr-defined]


@pytest.mark.parametrize("first", ["streams.kafka_native", "confluent_kafka"])
def test_the_lone_extension_and_the_package_give_the_same_classes(first: str) -> None:
    """Whichever is imported first, ``streams.kafka_native`` and the ``confluent_kafka``
    package export the very same classes (an ``except confluent_kafka.KafkaException``
    catches what a client from ``streams.kafka_native`` raises)."""
    other = "confluent_kafka" if first == "streams.kafka_native" else "streams.kafka_native"
    code = (f"import importlib, sys\na = importlib.import_module({first!r})\n"
            f"b = importlib.import_module({other!r})\n"
            "names = ['Producer', 'Consumer', 'KafkaError', 'KafkaException', 'Message',"
            " 'TopicPartition', 'OFFSET_BEGINNING', 'OFFSET_END']\n"
            "print(all(getattr(a, n) is getattr(b, n) for n in names))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "True"
