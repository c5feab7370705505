"""Channel settings shared by the sync and asyncio clients: message sizes, credentials and the
retry policy, which travels to gRPC as the channel's service config.

Which calls are retried: gRPC retries a call whose attempt failed with a retryable code before
the server sent any response (a status on its own), at most `max_attempts` attempts in all,
waiting a random time up to initial_backoff · multiplier^(n-1) (capped at max_backoff) before
attempt n + 1. The policy covers the calls that are safe to send twice:

- reads (GetStore, ListStores, Predict, PredictStream, ExportStore, ListEncoders, Ping),
  PinStore and Compile (applying either twice leaves the store as once);
- Adapt, whose examples carry ids (the client makes them up when the caller gives none): the
  store skips an id it applied already, so a retried stream applies each example once. Adapt
  also retries ABORTED, which the server answers when a concurrent call applied one of the ids
  meanwhile (the resend then skips them).

CreateStore, DeleteStore, Forget and ImportStore are not retried: a resend after a lost answer
would fail (ALREADY_EXISTS, NOT_FOUND) or, for Forget, remove the examples twice.

A client stream is retried only while all of it fits in the retry buffer (`buffer_bytes` per
call): a longer Adapt stream fails with the attempt's status, and resending it with the same
ids is still safe.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, List, Optional, Sequence, Tuple

import grpc

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
SERVICE = "adapt.v1.Adaptation"
IDEMPOTENT_METHODS = ("GetStore", "ListStores", "PinStore", "Compile", "Predict",
                      "PredictStream", "ExportStore", "ListEncoders", "Ping")
ID_DEDUPLICATED_METHODS = ("Adapt",)


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """gRPC's retry policy for the calls that are safe to resend (see the module's doc).

    max_attempts: attempts in all, 2-5 (gRPC caps it at 5); initial_backoff, max_backoff:
    seconds; multiplier: the growth of the backoff per attempt; buffer_bytes: the most a call
    may send and still be retried (its messages are kept until it ends).
    """

    max_attempts: int = 5
    initial_backoff: float = 0.1
    max_backoff: float = 2.0
    multiplier: float = 2.0
    buffer_bytes: int = 16 * 1024 * 1024

    def __post_init__(self) -> None:
        if not isinstance(self.max_attempts, int) or not 2 <= self.max_attempts <= 5:
            raise ValueError("RetryPolicy.max_attempts: an int in [2, 5], got %r" %
                             (self.max_attempts,))
        if not self.initial_backoff > 0 or not self.max_backoff >= self.initial_backoff:
            raise ValueError("RetryPolicy: need 0 < initial_backoff <= max_backoff, got %r, %r" %
                             (self.initial_backoff, self.max_backoff))
        if not self.multiplier > 0:
            raise ValueError("RetryPolicy.multiplier: > 0, got %r" % (self.multiplier,))
        if not isinstance(self.buffer_bytes, int) or self.buffer_bytes < 0:
            raise ValueError("RetryPolicy.buffer_bytes: an int >= 0, got %r" %
                             (self.buffer_bytes,))

    def _policy(self, codes: Sequence[str]) -> dict:
        return {
            "maxAttempts": self.max_attempts,
            "initialBackoff": "%.6fs" % self.initial_backoff,
            "maxBackoff": "%.6fs" % self.max_backoff,
            "backoffMultiplier": self.multiplier,
            "retryableStatusCodes": list(codes),
        }

    def service_config(self) -> str:
        """The service config (JSON) that carries the policy."""
        def names(methods):
            return [{"service": SERVICE, "method": m} for m in methods]

        return json.dumps({"methodConfig": [
            {"name": names(IDEMPOTENT_METHODS), "retryPolicy": self._policy(["UNAVAILABLE"])},
            {"name": names(ID_DEDUPLICATED_METHODS),
             "retryPolicy": self._policy(["UNAVAILABLE", "ABORTED"])},
        ]})


DEFAULT_RETRY = RetryPolicy()


@dataclasses.dataclass(frozen=True)
class Settings:
    """What a client needs to open (and reopen) its channel."""

    address: str
    token: Optional[str]
    timeout: float
    root_certificates: Optional[bytes]
    private_key: Optional[bytes]
    certificate_chain: Optional[bytes]
    options: Tuple[Tuple[str, Any], ...]
    # A cluster member's channel (routing to holders): the same, with retries off, since a
    # holder's UNAVAILABLE sends the call to the given member, whose channel retries.
    member_options: Tuple[Tuple[str, Any], ...] = ()

    @property
    def metadata(self) -> Optional[Tuple[Tuple[str, str], ...]]:
        return (("authorization", "Bearer " + self.token),) if self.token else None

    def credentials(self) -> Optional[grpc.ChannelCredentials]:
        if self.root_certificates is None:
            return None
        return grpc.ssl_channel_credentials(root_certificates=self.root_certificates,
                                            private_key=self.private_key,
                                            certificate_chain=self.certificate_chain)

    def with_timeout(self, timeout: float) -> "Settings":
        return dataclasses.replace(self, timeout=timeout)

    def for_member(self, address: str) -> "Settings":
        """The settings of a channel to the cluster member at `address`."""
        return dataclasses.replace(self, address=address, options=self.member_options)


def settings(address: str, token: Optional[str], timeout: float,
             root_certificates: Optional[bytes], max_message_bytes: int,
             channel_options: Sequence[Tuple[str, Any]], private_key: Optional[bytes],
             certificate_chain: Optional[bytes], retry: Optional[RetryPolicy]) -> Settings:
    """Validates a client's arguments and returns its channel settings."""
    if token is None:
        token = os.environ.get("ADAPTD_TOKEN") or None
    if (private_key is None) != (certificate_chain is None):
        raise ValueError("private_key and certificate_chain go together")
    if private_key is not None and root_certificates is None:
        raise ValueError("a client certificate needs root_certificates (TLS)")
    if timeout is None or timeout <= 0:
        raise ValueError("timeout: every call needs a positive deadline, got %r" % (timeout,))
    if retry is not None and not isinstance(retry, RetryPolicy):
        raise ValueError("retry: a RetryPolicy or None, got %r" % (retry,))
    sizes: List[Tuple[str, Any]] = [
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_receive_message_length", max_message_bytes),
    ]
    options = list(sizes)
    if retry is not None:
        options += [
            ("grpc.enable_retries", 1),
            ("grpc.service_config", retry.service_config()),
            # Only this policy: a resolver's own service config would replace it.
            ("grpc.service_config_disable_resolution", 1),
            ("grpc.per_rpc_retry_buffer_size", retry.buffer_bytes),
            ("grpc.retry_buffer_size", max(retry.buffer_bytes, 256 * 1024) * 4),
        ]
    else:
        options.append(("grpc.enable_retries", 0))
    options += list(channel_options)
    member_options = sizes + [("grpc.enable_retries", 0)] + list(channel_options)
    return Settings(address=address, token=token, timeout=float(timeout),
                    root_certificates=root_certificates, private_key=private_key,
                    certificate_chain=certificate_chain, options=tuple(options),
                    member_options=tuple(member_options))
