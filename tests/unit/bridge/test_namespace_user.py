"""Whose job a namespace's pods become: the Namespace's annotation, remembered 30 s, and a
namespace the bridge may not read named on the pods instead of guessed.

The API here is a stand-in object answering ``read_namespace`` (the call and the error mapping
are what is tested; tests/kubernetes runs the bridge against a real API server)."""

from __future__ import annotations

import pytest
from kubernetes.client import V1Namespace, V1ObjectMeta
from kubernetes.client.exceptions import ApiException

from agents.bridge import kube as kube_module
from agents.bridge.gang import GangError
from agents.bridge.kube import Kube


class Namespaces:
    def __init__(self) -> None:
        self.annotations: dict[str, dict[str, str]] = {}
        self.status: dict[str, int] = {}
        self.reads = 0

    def read_namespace(self, name: str) -> V1Namespace:
        self.reads += 1
        if name in self.status:
            raise ApiException(status=self.status[name], reason="Forbidden")
        return V1Namespace(metadata=V1ObjectMeta(name=name,
                                                 annotations=self.annotations.get(name)))


def _kube(api: Namespaces) -> Kube:
    kube = Kube.__new__(Kube)
    kube.core = api  # type: ignore[assignment]
    kube._namespace_users = {}
    return kube


def test_the_annotation_names_the_user_and_is_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    api = Namespaces()
    api.annotations["ml"] = {"sluice.dev/user": "alice"}
    kube = _kube(api)
    now = [100.0]
    monkeypatch.setattr(kube_module.time, "monotonic", lambda: now[0])
    assert kube.namespace_user("ml") == "alice"
    api.annotations["ml"] = {"sluice.dev/user": "bob"}
    now[0] += 29
    assert kube.namespace_user("ml") == "alice" and api.reads == 1
    now[0] += 2
    assert kube.namespace_user("ml") == "bob" and api.reads == 2
    assert kube.namespace_user("plain") == ""


def test_a_namespace_gone_has_no_user_and_one_unreadable_is_named() -> None:
    api = Namespaces()
    api.status = {"gone": 404, "secret": 403}
    kube = _kube(api)
    assert kube.namespace_user("gone") == ""
    with pytest.raises(GangError) as err:
        kube.namespace_user("secret")
    assert err.value.reason == "NamespaceUnreadable" and "namespaces get" in err.value.detail


def test_other_api_errors_are_left_to_the_caller_to_retry() -> None:
    api = Namespaces()
    api.status = {"ml": 500}
    with pytest.raises(ApiException):
        _kube(api).namespace_user("ml")
