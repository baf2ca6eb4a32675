"""The local broker's TLS material and admin credential, made with ``openssl`` (no own crypto).

``ensure_tls(data_dir)`` makes, once, under ``<data_dir>/tls/`` (directory mode 0700)::

    ca.key          the local CA's private key (EC P-256; 0600, never leaves this directory)
    ca.pem          the CA certificate: what clients trust (``SLUICE_KAFKA_CA``; 0644)
    broker.p12      PKCS12 keystore: the brokers' key and certificate (SAN 127.0.0.1, localhost;
                    serverAuth + clientAuth, CN=kafka-broker), read by Kafka as ``PKCS12``
    broker.pass     the keystore password (0600)
    admin.password  the SCRAM-SHA-512 password of the super-user ``admin`` (0600)

Passwords come from :mod:`secrets`. The files are reused on restart: a cluster keeps its CA.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ._errors import BrokerStartError
from ._jars import require_tool

BROKER_CN = "kafka-broker"
ADMIN_USER = "admin"
_DAYS = "825"


@dataclass(frozen=True)
class TlsFiles:
    """Where one cluster's TLS material lives."""

    directory: Path

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

    @property
    def ca(self) -> Path:
        return self.directory / "ca.pem"

    @property
    def keystore(self) -> Path:
        return self.directory / "broker.p12"

    @property
    def keystore_password_file(self) -> Path:
        return self.directory / "broker.pass"

    @property
    def admin_password_file(self) -> Path:
        return self.directory / "admin.password"

    def keystore_password(self) -> str:
        return self.keystore_password_file.read_text(encoding="utf-8").strip()

    def admin_password(self) -> str:
        return self.admin_password_file.read_text(encoding="utf-8").strip()


def write_secret(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` created with mode 0600 (whole, then renamed into place)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text + "\n")
    tmp.replace(path)


def _openssl(*args: str, cwd: Path) -> None:
    openssl = require_tool("openssl")
    done = subprocess.run([openssl, *args], cwd=cwd, capture_output=True, check=False)
    if done.returncode != 0:
        raise BrokerStartError(
            f"openssl {args[0]} failed: {done.stderr.decode(errors='replace').strip()}")


def ensure_tls(data_dir: Path) -> TlsFiles:
    """The cluster's CA, broker keystore and admin password, made if missing."""
    files = TlsFiles(data_dir / "tls")
    files.directory.mkdir(parents=True, exist_ok=True)
    files.directory.chmod(0o700)
    if files.keystore.exists() and files.admin_password_file.exists() and files.ca.exists():
        return files
    d = files.directory
    write_secret(files.keystore_password_file, secrets.token_urlsafe(24))
    if not files.admin_password_file.exists():
        write_secret(files.admin_password_file, secrets.token_urlsafe(24))
    old = os.umask(0o077)
    try:
        _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key", cwd=d)
        _openssl("req", "-x509", "-new", "-key", "ca.key", "-sha256", "-days", _DAYS,
                 "-subj", "/CN=Sluice local CA", "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-out", "ca.pem", cwd=d)
        _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "broker.key",
                 cwd=d)
        _openssl("req", "-new", "-key", "broker.key", "-subj", f"/CN={BROKER_CN}",
                 "-out", "broker.csr", cwd=d)
        (d / "broker.ext").write_text(
            "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyAgreement\n"
            "extendedKeyUsage=serverAuth,clientAuth\n"
            "subjectAltName=IP:127.0.0.1,DNS:localhost\n", encoding="ascii")
        _openssl("x509", "-req", "-in", "broker.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", _DAYS, "-sha256", "-extfile", "broker.ext",
                 "-out", "broker.pem", cwd=d)
        _openssl("pkcs12", "-export", "-inkey", "broker.key", "-in", "broker.pem",
                 "-certfile", "ca.pem", "-name", BROKER_CN, "-out", "broker.p12",
                 "-passout", f"file:{files.keystore_password_file}", cwd=d)
    finally:
        os.umask(old)
    files.ca.chmod(0o644)
    for leftover in ("broker.key", "broker.csr", "broker.ext", "ca.srl"):
        (d / leftover).unlink(missing_ok=True)
    return files


def admin_client_config(files: TlsFiles) -> dict[str, str]:
    """librdkafka settings that connect as the super-user ``admin`` over SASL_SSL."""
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": ADMIN_USER,
        "sasl.password": files.admin_password(),
        "ssl.ca.location": str(files.ca),
        "ssl.endpoint.identification.algorithm": "https",
    }


def secure_properties(files: TlsFiles) -> dict[str, object]:
    """The ``server.properties`` lines of a SASL_SSL broker with StandardAuthorizer ACLs.

    Clients and brokers: SASL_SSL with SCRAM-SHA-512 (brokers among themselves as ``admin``).
    Controllers: TLS with client certificates required (KRaft's controller listener cannot use
    SCRAM: its credentials live in the metadata the controllers serve); only a certificate
    signed by this cluster's CA gets in, and it maps to the principal ``kafka-broker``.
    """
    jaas = ("org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{ADMIN_USER}" password="{files.admin_password()}";')
    return {
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": jaas,
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(files.keystore),
        "ssl.keystore.password": files.keystore_password(),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(files.ca),
        "ssl.endpoint.identification.algorithm": "https",
        "listener.name.controller.ssl.client.auth": "required",
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]*)$/$1/,DEFAULT",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"User:{ADMIN_USER};User:{BROKER_CN}",
        "allow.everyone.if.no.acl.found": "false",
    }
