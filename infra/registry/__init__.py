"""A local schema registry with the Confluent REST API: Apicurio Registry, from Maven Central.

``python -m infra.registry fetch|start|stop|status`` (like ``infra.kafka``). ``fetch`` builds
Apicurio Registry once into ``~/.cache/sluice/apicurio-registry-<version>/``
(``$SLUICE_REGISTRY_BUILD`` overrides); ``start --dir D --port P`` runs it on 127.0.0.1:P with its
schemas kept in an H2 database file under ``D`` and prints its Confluent-compatible URL
(``http://127.0.0.1:P/apis/ccompat/v7``). Why Apicurio and not Karapace: docs/wire-format.md,
"Confluent framing through a schema registry".
"""

from ._build import APICURIO_VERSION, RegistryInfraError, ensure_build
from ._local import LocalRegistry, ccompat_url

__all__ = ["APICURIO_VERSION", "LocalRegistry", "RegistryInfraError", "ccompat_url",
           "ensure_build"]
