"""TLS for a stack started with ``--tls`` (issue 32; ``--tls-hops edge``, issue 50): a
private certificate authority made per stack start, one certificate for the stack's roles,
and the harness's own trust in it.

:func:`make` writes three files into a folder of the stack's (the local backend's work
folder, the docker backend's project folder, both removed when the stack stops and swept
after a kill): ``ca.pem`` (the authority's certificate), ``cert.pem`` and ``key.pem`` (the
roles' certificate and its key). The authority's own key never touches the disk: it signs
the one certificate and is dropped, so nothing else can be signed by it. The certificate
names every host a role is reached by (its role names, ``localhost``, 127.0.0.1 and ::1) and
lasts 30 days; keys are ECDSA P-256, and both certificates carry key identifiers. The roles
read the files through ``ipclab_services.tls`` (``IPCLAB_TLS_CA``, ``IPCLAB_TLS_CERT``,
``IPCLAB_TLS_KEY``).

The harness trusts each authority it made (:func:`trust`): urllib's default opener in this
process verifies the gateway's certificate against the authorities of the stacks it
started (each authority named once, the issuer found by its key identifier), and the load
generator gets the authority's file (Locust verifies it too). An authority stays trusted
after its stack stops; its key is gone, so nothing more can be signed by it.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import secrets
import ssl
import threading
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_FILE, CERT_FILE, KEY_FILE = "ca.pem", "cert.pem", "key.pem"
LIFETIME = dt.timedelta(days=30)  # a stack outlives no run by that much (a soak: hours)
SKEW = dt.timedelta(minutes=5)  # a certificate valid from a little before now
LOOPBACK = ("localhost", "127.0.0.1", "::1")
HOPS_ENV, EDGE = "IPCLAB_TLS_HOPS", "edge"  # the gateway's clients dial in the clear


@dataclass(frozen=True)
class StackTls:
    """A stack's TLS files (paths on the harness's machine)."""

    directory: Path

    @property
    def ca(self) -> Path:
        return self.directory / CA_FILE

    @property
    def cert(self) -> Path:
        return self.directory / CERT_FILE

    @property
    def key(self) -> Path:
        return self.directory / KEY_FILE

    def env(self, inside: Path | None = None) -> dict[str, str]:
        """The roles' environment: the three paths, as the roles see them (``inside``: the
        folder's path in a container, where it is mounted)."""
        base = inside if inside is not None else self.directory
        return {
            "IPCLAB_TLS_CA": str(base / CA_FILE),
            "IPCLAB_TLS_CERT": str(base / CERT_FILE),
            "IPCLAB_TLS_KEY": str(base / KEY_FILE),
        }

    def role_env(self, gateway: bool, edge: bool, inside: Path | None = None) -> dict[str, str]:
        """A role's TLS environment: every role's with every hop encrypted; with ``edge``
        (``--tls-hops edge``) the gateway's alone, with ``IPCLAB_TLS_HOPS=edge``: it serves
        HTTPS and dials the services and the broker in the clear; the services get nothing
        and serve in the clear."""
        if not edge:
            return self.env(inside)
        return {**self.env(inside), HOPS_ENV: EDGE} if gateway else {}


CONTAINER_DIR = Path("/run/ipclab/tls")  # where the docker backend mounts a stack's files


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _alternative_names(hosts: Iterable[str]) -> list[x509.GeneralName]:
    out: list[x509.GeneralName] = []
    for host in dict.fromkeys([*hosts, *LOOPBACK]):
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            out.append(x509.DNSName(host))
    return out


def _key_usage(authority: bool) -> x509.KeyUsage:
    """An authority signs certificates (and lists); a server's key signs its handshakes."""
    return x509.KeyUsage(
        digital_signature=not authority,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=authority,
        crl_sign=authority,
        encipher_only=False,
        decipher_only=False,
    )


def make(directory: Path, hosts: Iterable[str], stack: str, mounted: bool = False) -> StackTls:
    """A new authority and the stack's certificate for ``hosts`` in ``directory`` (made;
    the key readable by this user alone, or, ``mounted`` into containers whose users differ,
    by anyone who can reach the folder: its parent must be private). Returns the files."""
    directory.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    # a name of its own per start, and key identifiers on both certificates: among the
    # authorities this process trusts (one per stack it started) the verifier finds the
    # issuer by its key, never another start's authority of the same stack
    ca_name = _name(f"ipclab {stack} authority {secrets.token_hex(4)}")
    ca_id = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - SKEW)
        .not_valid_after(now + LIFETIME)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(ca_id, critical=False)
        .add_extension(_key_usage(authority=True), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(f"ipclab {stack}"))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - SKEW)
        .not_valid_after(now + LIFETIME)
        .add_extension(x509.SubjectAlternativeName(_alternative_names(hosts)), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_id), critical=False
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(_key_usage(authority=False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    files = StackTls(directory)
    files.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    fd = os.open(files.key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(pem)
    if mounted:  # the services' user (10001) and the broker's read them in their containers
        for path in (files.ca, files.cert, files.key):
            path.chmod(0o644)
        directory.chmod(0o755)
    trust(files.ca)
    return files


# --- the harness's trust ------------------------------------------------------------------

_lock = threading.Lock()
_context: ssl.SSLContext | None = None


def context() -> ssl.SSLContext:
    """This process's client context (urllib's default opener from the first call on): the
    system's authorities and every stack authority :func:`trust` was given (a stack's roles
    accept TLS 1.3 only, so that is what a call to them negotiates)."""
    global _context
    with _lock:
        if _context is None:
            _context = ssl.create_default_context()
            urllib.request.install_opener(
                urllib.request.build_opener(urllib.request.HTTPSHandler(context=_context))
            )
        return _context


def trust(ca: Path) -> None:
    """Trust a stack's authority in this process from now on (urllib's default opener)."""
    context().load_verify_locations(cafile=str(ca))
