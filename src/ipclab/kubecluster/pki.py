"""The local cluster's certificates and keys, made at every start (no kubeadm).

The minimum a one-node cluster with one identity needs, made with ``cryptography`` as
``ipclab.tls`` makes a stack's (ECDSA P-256, key identifiers on every certificate):

- ``ca.crt``: the cluster's authority. Its key signs the two certificates below and is
  dropped: nothing more can be signed by it (nothing here asks for more: the kubelet's
  serving certificate is self-signed in its own folder, and no CSR is ever approved).
- ``apiserver.crt``/``.key``: the API server's serving certificate, for every name it is
  reached by: ``localhost``, the ``kubernetes`` Service's names, 127.0.0.1 and its
  ClusterIP (and an advertise address, if one is given).
- ``admin.crt``/``.key``: the one client identity, ``CN=ipclab-admin, O=system:masters``
  (the group RBAC lets do anything): used by the controller-manager, the scheduler, the
  kubelet, kube-proxy, the API server towards the kubelet, and the harness. Per-component
  identities would be hardening for a shared cluster; this one is the harness's alone.
- ``sa.key``/``sa.pub``: the key pair the API server signs service-account tokens with.
- etcd's own authority, ``etcd-ca.crt`` (its key dropped too), which signs exactly two
  certificates: etcd's (``etcd-server.crt``/``.key``: serving on 127.0.0.1 and localhost,
  and a client of itself, as etcd's gRPC gateway dials its own port with it) and the API
  server's client certificate for etcd (``apiserver-etcd-client.crt``/``.key``). etcd
  requires a client certificate from this authority (mutual TLS), so only a holder of one
  of those two keys (root, in the root's ``pki``) gets in: without it any local user could
  write a privileged pod straight into ``/registry/pods/...``, past RBAC and admission
  (issue 48).

Every key file is mode 0600 in a 0700 folder, written without following a symlink.
The certificates last a year; the cluster is remade at every start anyway.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ipclab.kubecluster.layout import API_SERVICE_IP, CLUSTER_DOMAIN, LOOPBACK
from ipclab.private import private_dir

LIFETIME = dt.timedelta(days=365)
SKEW = dt.timedelta(minutes=5)
ADMIN_USER = "ipclab-admin"
ADMIN_GROUP = "system:masters"
API_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    f"kubernetes.default.svc.{CLUSTER_DOMAIN}",
)
API_IPS = (LOOPBACK, API_SERVICE_IP)
ETCD_SERVER = "ipclab-etcd"
ETCD_CLIENT = "kube-apiserver-etcd-client"
_NOFOLLOW = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class Pki:
    """The files of :func:`make`, by role."""

    directory: Path

    @property
    def ca(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def apiserver_cert(self) -> Path:
        return self.directory / "apiserver.crt"

    @property
    def apiserver_key(self) -> Path:
        return self.directory / "apiserver.key"

    @property
    def admin_cert(self) -> Path:
        return self.directory / "admin.crt"

    @property
    def admin_key(self) -> Path:
        return self.directory / "admin.key"

    @property
    def sa_key(self) -> Path:
        return self.directory / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.directory / "sa.pub"

    @property
    def etcd_ca(self) -> Path:
        return self.directory / "etcd-ca.crt"

    @property
    def etcd_server_cert(self) -> Path:
        return self.directory / "etcd-server.crt"

    @property
    def etcd_server_key(self) -> Path:
        return self.directory / "etcd-server.key"

    @property
    def etcd_client_cert(self) -> Path:
        """The API server's client certificate for etcd (and the harness's health check)."""
        return self.directory / "apiserver-etcd-client.crt"

    @property
    def etcd_client_key(self) -> Path:
        return self.directory / "apiserver-etcd-client.key"

    def node_cert(self, node: str) -> Path:
        """An extra node's kubelet client certificate (``system:node:<node>``)."""
        return self.directory / f"node-{node}.crt"

    def node_key(self, node: str) -> Path:
        return self.directory / f"node-{node}.key"

    @property
    def proxy_cert(self) -> Path:
        """The extra nodes' kube-proxy client certificate (``system:kube-proxy``)."""
        return self.directory / "kube-proxy.crt"

    @property
    def proxy_key(self) -> Path:
        return self.directory / "kube-proxy.key"

    def key_files(self) -> tuple[Path, ...]:
        return (
            self.apiserver_key, self.admin_key, self.sa_key,
            self.etcd_server_key, self.etcd_client_key,
        )  # fmt: skip


def _name(common: str, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common)]
    if organization is not None:
        attributes.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def _key_usage(authority: bool) -> x509.KeyUsage:
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


def alternative_names(names: Iterable[str], ips: Iterable[str]) -> list[x509.GeneralName]:
    """DNS names, then IP addresses, each once."""
    out: list[x509.GeneralName] = [x509.DNSName(n) for n in dict.fromkeys(names)]
    out += [x509.IPAddress(ipaddress.ip_address(i)) for i in dict.fromkeys(ips)]
    return out


def _authority(
    now: dt.datetime, common: str = "ipclab-k8s-ca"
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(common)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - SKEW)
        .not_valid_after(now + LIFETIME)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .add_extension(_key_usage(authority=True), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _leaf(
    issuer: tuple[x509.Certificate, ec.EllipticCurvePrivateKey],
    subject: x509.Name,
    usage: x509.ObjectIdentifier | list[x509.ObjectIdentifier],
    now: dt.datetime,
    sans: list[x509.GeneralName] | None = None,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A certificate for a new key, signed by ``issuer``: a server's (``usage`` serverAuth,
    with ``sans``), a client's (clientAuth), or both (a list)."""
    usages = usage if isinstance(usage, list) else [usage]
    ca, ca_key = issuer
    key = ec.generate_private_key(ec.SECP256R1())
    ca_id = ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - SKEW)
        .not_valid_after(now + LIFETIME)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_id), critical=False
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .add_extension(_key_usage(authority=False), critical=True)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def _write(path: Path, data: bytes, mode: int) -> None:
    """``path`` with ``data`` and exactly ``mode``, never through a symlink."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as f:
        os.fchmod(f.fileno(), mode)
        f.write(data)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _write_pair(
    cert: Path, key: Path, pair: tuple[x509.Certificate, ec.EllipticCurvePrivateKey]
) -> None:
    _write(cert, _cert_pem(pair[0]), 0o644)
    _write(key, _key_pem(pair[1]), 0o600)


def _make_etcd(files: Pki, now: dt.datetime) -> None:
    """etcd's authority, its serving certificate and the API server's client one."""
    authority = _authority(now, "ipclab-etcd-ca")
    sans = alternative_names(["localhost"], [LOOPBACK])
    both = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
    server = _leaf(authority, _name(ETCD_SERVER), both, now, sans)
    client = _leaf(authority, _name(ETCD_CLIENT), ExtendedKeyUsageOID.CLIENT_AUTH, now)
    _write(files.etcd_ca, _cert_pem(authority[0]), 0o644)
    _write_pair(files.etcd_server_cert, files.etcd_server_key, server)
    _write_pair(files.etcd_client_cert, files.etcd_client_key, client)


NODE_GROUP = "system:nodes"  # the Node authorizer's and RBAC's group of kubelets
PROXY_USER = "system:kube-proxy"  # bound to system:node-proxier by the default policy


def _make_nodes(
    files: Pki,
    authority: tuple[x509.Certificate, ec.EllipticCurvePrivateKey],
    nodes: Iterable[str],
    now: dt.datetime,
) -> None:
    """Each extra node's kubelet identity and their kube-proxies' one (none: nothing)."""
    client = ExtendedKeyUsageOID.CLIENT_AUTH
    names = list(nodes)
    for node in names:
        pair = _leaf(authority, _name(f"system:node:{node}", NODE_GROUP), client, now)
        _write_pair(files.node_cert(node), files.node_key(node), pair)
    if names:
        proxy = _leaf(authority, _name(PROXY_USER), client, now)
        _write_pair(files.proxy_cert, files.proxy_key, proxy)


def make(directory: Path, extra_ips: Iterable[str] = (), nodes: Iterable[str] = ()) -> Pki:
    """A new authority, the API server's and the admin's certificates, the
    service-account key pair and etcd's own authority and certificates in ``directory``
    (made 0700 if new; a private directory of this user's, else ``UnsafeState``).
    ``extra_ips``: more addresses the API server is reached at (an advertise address other
    than loopback, the extra nodes' way in). ``nodes``: the extra nodes whose kubelet
    (and kube-proxy) identities are signed too, before the authority's key is dropped."""
    private_dir(directory, "the cluster's keys", "remove it or set IPCLAB_K8S_ROOT")
    now = dt.datetime.now(dt.UTC)
    authority = _authority(now)
    sans = alternative_names(API_NAMES, [*API_IPS, *extra_ips])
    server = _leaf(authority, _name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH, now, sans)
    admin = _leaf(authority, _name(ADMIN_USER, ADMIN_GROUP), ExtendedKeyUsageOID.CLIENT_AUTH, now)
    sa = ec.generate_private_key(ec.SECP256R1())
    files = Pki(directory)
    _write(files.ca, _cert_pem(authority[0]), 0o644)
    _write_pair(files.apiserver_cert, files.apiserver_key, server)
    _write_pair(files.admin_cert, files.admin_key, admin)
    _write(files.sa_key, _key_pem(sa), 0o600)
    public = sa.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    _write(files.sa_pub, public, 0o644)
    _make_nodes(files, authority, nodes, now)
    _make_etcd(files, now)
    return files
