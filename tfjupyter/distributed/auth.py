"""The cluster's shared token, and TLS.

Every RPC carries the cluster token in its metadata; servers refuse calls without it. Where a
token comes from, first match wins:

1. ``ClusterSpec``-level: ``tf.train.Server(..., token=...)`` / ``Session(config=ConfigProto(
   cluster_token=...))``;
2. the environment variable ``TFJUPYTER_CLUSTER_TOKEN``;
3. a token file per task address in ``~/.tfjupyter/tokens/`` (override the folder with
   ``TFJUPYTER_TOKEN_DIR``), written (mode 0600) by the first task of a cluster that starts on
   this machine and read by the others and by clients — so the tutorials' separately started
   tasks on one host find each other with no set-up.

TLS: set ``TFJUPYTER_TLS_CERT`` and ``TFJUPYTER_TLS_KEY`` (PEM files; ``TFJUPYTER_TLS_CA`` for
the authority clients trust) or pass them to Server; channels then use grpc.ssl_* credentials.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from typing import Iterable, Optional, Tuple

import grpc

__all__ = ["resolve_token", "token_for_target", "TokenInterceptor", "TOKEN_METADATA_KEY",
           "TlsConfig"]

TOKEN_METADATA_KEY = "tfjupyter-cluster-token"
ENV_TOKEN = "TFJUPYTER_CLUSTER_TOKEN"


def _token_dir() -> str:
    return os.environ.get("TFJUPYTER_TOKEN_DIR") or os.path.join(os.path.expanduser("~"),
                                                                   ".tfjupyter", "tokens")


def _token_path(address: str) -> str:
    digest = hashlib.sha256(address.strip().encode()).hexdigest()[:32]
    return os.path.join(_token_dir(), f"{digest}.token")


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="ascii") as f:
            token = f.read().strip()
        return token or None
    except OSError:
        return None


def resolve_token(addresses: Iterable[str], explicit: Optional[str] = None) -> str:
    """The token of the cluster whose tasks have these addresses; creates one if none exists."""
    if explicit:
        return explicit
    env = os.environ.get(ENV_TOKEN)
    if env:
        return env
    addresses = sorted(set(addresses))
    for address in addresses:
        token = _read(_token_path(address))
        if token:
            _write_all(addresses, token)
            return token
    token = secrets.token_hex(32)
    _write_all(addresses, token)
    # Another task may have raced us: everyone settles on the first file written.
    return _read(_token_path(addresses[0])) or token


def _write_all(addresses: Iterable[str], token: str) -> None:
    os.makedirs(_token_dir(), mode=0o700, exist_ok=True)
    for address in addresses:
        path = _token_path(address)
        if _read(path) == token:
            continue
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(token)


def token_for_target(address: str, explicit: Optional[str] = None) -> Optional[str]:
    """The token a client presents to the task at ``address`` (None if none is known)."""
    return explicit or os.environ.get(ENV_TOKEN) or _read(_token_path(address))


class TokenInterceptor(grpc.ServerInterceptor):
    """Refuses every call whose metadata lacks the cluster token, before any handler runs."""

    def __init__(self, token: str):
        self._token = token.encode()

        def deny(request, context):
            context.abort(grpc.StatusCode.UNAUTHENTICATED,
                          "tfjupyter: missing or wrong cluster token (set "
                          f"{ENV_TOKEN} or pass the cluster's token)")
        self._deny = grpc.unary_unary_rpc_method_handler(deny)
        self._deny_stream = grpc.stream_stream_rpc_method_handler(
            lambda requests, context: deny(None, context))
        self._deny_unary_stream = grpc.unary_stream_rpc_method_handler(deny)

    def intercept_service(self, continuation, handler_call_details):
        presented = dict(handler_call_details.invocation_metadata or ()).get(TOKEN_METADATA_KEY, "")
        if hmac.compare_digest(str(presented).encode(), self._token):
            return continuation(handler_call_details)
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        if handler.request_streaming:
            return self._deny_stream
        if handler.response_streaming:
            return self._deny_unary_stream
        return self._deny


class TlsConfig:
    """PEM files for TLS; from arguments or the TFJUPYTER_TLS_* environment variables."""

    def __init__(self, cert: Optional[str] = None, key: Optional[str] = None,
                 ca: Optional[str] = None):
        self.cert = cert or os.environ.get("TFJUPYTER_TLS_CERT")
        self.key = key or os.environ.get("TFJUPYTER_TLS_KEY")
        self.ca = ca or os.environ.get("TFJUPYTER_TLS_CA")
        if bool(self.cert) != bool(self.key):
            raise ValueError("TLS needs both a certificate and its private key "
                             "(TFJUPYTER_TLS_CERT and TFJUPYTER_TLS_KEY)")

    @property
    def enabled(self) -> bool:
        return bool(self.cert)

    @staticmethod
    def _load(path: Optional[str]) -> Optional[bytes]:
        if not path:
            return None
        with open(path, "rb") as f:
            return f.read()

    def server_credentials(self) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials([(self._load(self.key), self._load(self.cert))])

    def channel_credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(root_certificates=self._load(self.ca or self.cert))


def channel_options() -> Tuple:
    from .wire import MAX_MESSAGE_BYTES
    return (("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.keepalive_time_ms", 10000), ("grpc.keepalive_timeout_ms", 5000),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.max_pings_without_data", 0),
            ("grpc.initial_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", 1000))
