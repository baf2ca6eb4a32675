"""confluent-kafka's client classes without its package's start-up (issue 17: a light node daemon).

``import confluent_kafka`` runs the package's ``__init__``, which imports its serializing and
deserializing clients, their schema-registry builder and with them ``asyncio`` and ``ssl``:
about 10 MiB of RSS and 30 ms that a process using only ``Producer`` and ``Consumer`` never
needs (the C extension ``confluent_kafka.cimpl`` alone, librdkafka included, is about 5 MiB).
This module loads that extension by itself, under its own name, when the package has not been
imported yet; when it has been (a worker, the views), it is the package's own. Either way the
classes are the same objects ``confluent_kafka`` exports: if the package is imported later it
finds ``confluent_kafka.cimpl`` in ``sys.modules`` and re-exports this module's classes, so
``except confluent_kafka.KafkaException`` still catches what these clients raise.

Only the producer, the consumer and their value types come from here; the admin client and the
schema-registry client are Python modules of the package and are imported from it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import TYPE_CHECKING

__all__ = ["OFFSET_BEGINNING", "OFFSET_END", "Consumer", "KafkaError", "KafkaException",
           "Message", "Producer", "TopicPartition"]

_NAME = "confluent_kafka.cimpl"


def _load_cimpl() -> ModuleType:
    """``confluent_kafka.cimpl``, loaded without running ``confluent_kafka/__init__.py``."""
    loaded = sys.modules.get(_NAME)
    if loaded is not None:
        return loaded
    package = importlib.util.find_spec("confluent_kafka")  # finds it; does not import it
    for folder in (package.submodule_search_locations or []) if package else []:
        found = importlib.machinery.PathFinder.find_spec("cimpl", [folder])
        if found is not None and found.origin is not None:
            spec = importlib.util.spec_from_file_location(_NAME, found.origin)
            if spec is not None and spec.loader is not None:
                module = importlib.util.module_from_spec(spec)
                sys.modules[_NAME] = module
                try:
                    spec.loader.exec_module(module)
                except BaseException:
                    del sys.modules[_NAME]
                    raise
                return module
    return importlib.import_module(_NAME)  # the ordinary way (and its ImportError)


if TYPE_CHECKING:
    from confluent_kafka import (
        OFFSET_BEGINNING,
        OFFSET_END,
        Consumer,
        KafkaError,
        KafkaException,
        Message,
        Producer,
        TopicPartition,
    )
else:
    _cimpl = _load_cimpl()
    OFFSET_BEGINNING = _cimpl.OFFSET_BEGINNING
    OFFSET_END = _cimpl.OFFSET_END
    Consumer = _cimpl.Consumer
    KafkaError = _cimpl.KafkaError
    KafkaException = _cimpl.KafkaException
    Message = _cimpl.Message
    Producer = _cimpl.Producer
    TopicPartition = _cimpl.TopicPartition
