"""The local control plane's certificates, made with ``cryptography``.

One CA signs the API server's serving certificate (loopback and the ``kubernetes`` service
names) and the client certificates of the admin (``O=system:masters``), the controller
manager (``system:kube-controller-manager``) and kwok; an RSA key pair signs service-account
tokens. Files are written once into the cluster folder and kept across restarts.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["CLIENTS", "ensure_certs"]

# client name → (common name, organization)
CLIENTS = {
    "admin": ("kubernetes-admin", "system:masters"),
    "controller-manager": ("system:kube-controller-manager", ""),
    "kwok": ("kwok", "system:masters"),
}
_DAYS = 3650


def _name(common: str, org: str = "") -> x509.Name:
    parts = [x509.NameAttribute(NameOID.COMMON_NAME, common)]
    if org:
        parts.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(parts)


def _write_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey, path: Path) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


def _issue(ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate, subject: x509.Name,
           server: bool, sans: list[x509.GeneralName], prefix: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_cert.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=_DAYS))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    _write_key(key, prefix.with_suffix(".key"))
    prefix.with_suffix(".crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def ensure_certs(pki: Path, service_ip: str = "10.0.0.1") -> Path:
    """Write the CA, serving, client and service-account files under ``pki`` if missing."""
    pki.mkdir(parents=True, exist_ok=True)
    if (pki / "sa.pub").exists():
        return pki
    ca_key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = _name("sluice-local-kubernetes-ca")
    ca_cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
               .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=_DAYS))
               .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True,
                                            crl_sign=True, content_commitment=False,
                                            key_encipherment=False, data_encipherment=False,
                                            key_agreement=False, encipher_only=False,
                                            decipher_only=False), critical=True)
               .sign(ca_key, hashes.SHA256()))
    _write_key(ca_key, pki / "ca.key")
    (pki / "ca.crt").write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    dns = ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
           "kubernetes.default.svc.cluster.local"]
    sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    sans += [x509.IPAddress(ipaddress.ip_address(a)) for a in ("127.0.0.1", service_ip)]
    _issue(ca_key, ca_cert, _name("kube-apiserver"), True, sans, pki / "apiserver")
    for client, (common, org) in CLIENTS.items():
        _issue(ca_key, ca_cert, _name(common, org), False, [], pki / client)
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(sa_key, pki / "sa.key")
    (pki / "sa.pub").write_bytes(sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return pki
