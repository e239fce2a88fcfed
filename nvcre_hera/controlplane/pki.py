"""Certificates for the loopback control plane: one CA, the API server's serving cert, an admin client cert and the
service-account signing key. ECDSA P-256 throughout: fast to generate, accepted by Go's TLS and by kube-apiserver
for signing service-account tokens (ES256)."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = dt.timedelta(days=30)
SERVING_IPS = ("127.0.0.1", "10.0.0.1")  # loopback, and the `kubernetes` Service's ClusterIP in 10.0.0.0/24
SERVING_DNS = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")


@dataclass(frozen=True)
class Pki:
    """Paths of the files `write_pki` creates."""
    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    sa_key: Path
    sa_pub: Path

    @classmethod
    def under(cls, d: Path) -> "Pki":
        return cls(d / "ca.crt", d / "ca.key", d / "apiserver.crt", d / "apiserver.key",
                   d / "admin.crt", d / "admin.key", d / "sa.key", d / "sa.pub")


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _builder(subject: x509.Name, issuer: x509.Name, pub, now: dt.datetime) -> x509.CertificateBuilder:
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(pub)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + VALIDITY))


def make_ca(now: dt.datetime) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = _key()
    name = _name("nvcre-e2e-ca")
    cert = (_builder(name, name, key.public_key(), now)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return key, cert


def make_leaf(ca_key, ca_cert: x509.Certificate, cn: str, now: dt.datetime, *, org: str | None = None,
              server: bool) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = _key()
    b = _builder(_name(cn, org), ca_cert.subject, key.public_key(), now)
    b = b.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
    b = b.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if server:
        sans = [x509.IPAddress(ipaddress.ip_address(ip)) for ip in SERVING_IPS]
        sans += [x509.DNSName(n) for n in SERVING_DNS]
        b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return key, b.sign(ca_key, hashes.SHA256())


def write_pki(d: Path, now: dt.datetime | None = None) -> Pki:
    """Generate every key and certificate into `d` (created 0700; keys 0600)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    d.mkdir(parents=True, exist_ok=True)
    d.chmod(0o700)
    p = Pki.under(d)
    ca_key, ca = make_ca(now)
    srv_key, srv = make_leaf(ca_key, ca, "kube-apiserver", now, server=True)
    adm_key, adm = make_leaf(ca_key, ca, "nvcre-e2e-admin", now, org="system:masters", server=False)
    sa_key = _key()
    files = {
        p.ca_cert: ca.public_bytes(serialization.Encoding.PEM), p.ca_key: _pem_key(ca_key),
        p.serving_cert: srv.public_bytes(serialization.Encoding.PEM), p.serving_key: _pem_key(srv_key),
        p.admin_cert: adm.public_bytes(serialization.Encoding.PEM), p.admin_key: _pem_key(adm_key),
        p.sa_key: _pem_key(sa_key),
        p.sa_pub: sa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                   serialization.PublicFormat.SubjectPublicKeyInfo),
    }
    for path, data in files.items():
        path.write_bytes(data)
        path.chmod(0o600 if path.suffix == ".key" else 0o644)
    return p
