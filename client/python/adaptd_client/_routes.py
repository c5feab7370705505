"""Routing to holders in a cluster on etcd (docs/CLUSTER_OPERATIONS.md, "Clients route to
holders"), shared by the sync and asyncio clients.

A member answers ClusterRoutes with the route table: the members and, per shard, the index of
the member holding it (-1: none). A store's shard is fnv1a64("tenant/store") mod the shard
count (4,096). A member that forwarded a call puts the holder on its answer, the header
`adaptd-holder: SSSS NAME HOST:PORT REVISION`; a hint whose etcd revision is newer than what
the table knows of its shard updates it.

RouteState keeps the table and decides when to refetch it: before the first routed call, and
after a hint that changed a holder or an UNAVAILABLE from a holder, at most once a second. A
given member that answers ClusterRoutes UNIMPLEMENTED (a single server) turns routing off for
good. The clients dial the members and make the calls; RouteState only answers addresses.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from typing import Any, Callable, Iterable, Iterator, List, Optional, Tuple

import grpc

from ._channel import ID_DEDUPLICATED_METHODS, IDEMPOTENT_METHODS

SHARDS = 4096
HOLDER_HEADER = "adaptd-holder"
REFETCH_INTERVAL_S = 1.0

_FNV_OFFSET = 0xcbf29ce484222325
_FNV_PRIME = 0x100000001b3
_MASK = (1 << 64) - 1

# The calls for one store that go to its holder, and the request field naming it; the others
# (ListStores, PredictStream, ListEncoders, Ping, health, ClusterRoutes) stay on the given member.
ROUTED_METHODS = ("CreateStore", "GetStore", "DeleteStore", "PinStore", "Compile", "Predict",
                  "Feedback", "Adapt", "Forget", "ImportStore", "ExportStore")
# The routed calls that a holder's UNAVAILABLE sends to the given member within the call's
# deadline: those the retry policy resends (with retries on). The others raise it, as they
# would from the given member.
RESENT_METHODS = tuple(m for m in ROUTED_METHODS
                       if m in IDEMPOTENT_METHODS + ID_DEDUPLICATED_METHODS)


def resend_to_given(code: Any, method: str, request: Any, retries: bool) -> bool:
    """Whether a routed call the holder failed with `code` goes to the given member: an
    UNAVAILABLE, for a call the retry policy resends (with retries on) whose request can be
    sent again (a message or a list of them, not an iterator)."""
    return (code == grpc.StatusCode.UNAVAILABLE and retries and method in RESENT_METHODS and
            not isinstance(request, Iterator))


@functools.lru_cache(maxsize=65536)
def store_shard(tenant: str, store: str, shards: int = SHARDS) -> int:
    """The shard of tenant/store: 64-bit FNV-1a of the UTF-8 bytes of "tenant/store", mod
    `shards` (remembered for the last 65,536 stores asked: a call's routing costs a lookup)."""
    value = _FNV_OFFSET
    for byte in ("%s/%s" % (tenant, store)).encode("utf-8"):
        value = ((value ^ byte) * _FNV_PRIME) & _MASK
    return value % shards


@dataclasses.dataclass(frozen=True)
class HolderHint:
    shard: int
    name: str
    address: str
    revision: int


def parse_holder_hint(value: str, shards: int = SHARDS) -> HolderHint:
    """One `adaptd-holder` header; ValueError naming the part that is wrong."""
    parts = value.split()

    def bad(what: str) -> ValueError:
        return ValueError('%s "%s": %s (expected "SSSS NAME HOST:PORT REVISION")' %
                          (HOLDER_HEADER, value, what))

    if len(parts) != 4:
        raise bad("%d parts, not 4" % len(parts))
    shard_text, name, address, revision_text = parts
    try:
        shard = int(shard_text, 16) if len(shard_text) == 4 else -1
    except ValueError:
        shard = -1
    if not 0 <= shard < shards:
        raise bad('the shard "%s" is not 4 hex digits below %d' % (shard_text, shards))
    if ":" not in address:
        raise bad('the address "%s" is not HOST:PORT' % address)
    revision = int(revision_text) if revision_text.isdigit() else 0
    if revision <= 0:
        raise bad('the revision "%s" is not a positive integer' % revision_text)
    return HolderHint(shard, name, address, revision)


def hint_of(*metadata: Optional[Iterable[Tuple[str, Any]]]) -> Optional[str]:
    """The holder header among an answer's initial metadata and trailers (an error answered
    without a message carries its headers in the trailers)."""
    for pairs in metadata:
        for key, value in pairs or ():
            if key == HOLDER_HEADER:
                return value.decode() if isinstance(value, bytes) else str(value)
    return None


class RouteTable:
    """Who holds each shard: a ClusterRoutes answer, validated, with the hints seen since."""

    def __init__(self, response: Any) -> None:
        """ValueError naming the field when the answer is not a table."""
        if not response.holders:
            raise ValueError("ClusterRoutes: holders is empty (no shards)")
        self.addresses: List[str] = []
        for i, member in enumerate(response.members):
            if not member.name or not member.address:
                raise ValueError("ClusterRoutes: members[%d] has no %s" %
                                 (i, "name" if not member.name else "address"))
            self.addresses.append(member.address)
        count = len(self.addresses)
        self.holders = list(response.holders)
        for shard, holder in enumerate(self.holders):
            if not -1 <= holder < count:
                raise ValueError("ClusterRoutes: holders[%d] is %d, not -1 or below %d "
                                 "(the members)" % (shard, holder, count))
        self.learned = [0] * len(self.holders)
        self.revision = int(response.revision)

    @property
    def shards(self) -> int:
        return len(self.holders)

    def holder_address(self, shard: int) -> Optional[str]:
        """The address of the member holding `shard`; None when none does."""
        if not 0 <= shard < len(self.holders) or self.holders[shard] < 0:
            return None
        return self.addresses[self.holders[shard]]

    def apply(self, hint: HolderHint) -> bool:
        """Takes a hint newer than what the table knows of its shard; True when it changed the
        holder."""
        if not 0 <= hint.shard < len(self.holders):
            return False
        if hint.revision <= max(self.revision, self.learned[hint.shard]):
            return False
        self.learned[hint.shard] = hint.revision
        if self.holder_address(hint.shard) == hint.address:
            return False
        if hint.address not in self.addresses:
            self.addresses.append(hint.address)
        self.holders[hint.shard] = self.addresses.index(hint.address)
        return True


class RouteState:
    """The route table of one client and when to refetch it. Thread-safe; never blocks on a
    call (the clients fetch: `begin_fetch` says whether one is due and claims it, `end_fetch`
    takes its answer)."""

    def __init__(self, given: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.given = given
        self._clock = clock
        self._lock = threading.Lock()
        self._table: Optional[RouteTable] = None
        self._enabled = True
        self._stale = True
        self._fetching = False
        self._last_fetch = float("-inf")

    @property
    def enabled(self) -> bool:
        with self._lock:
            return self._enabled

    @property
    def revision(self) -> Optional[int]:
        """The table's revision; None before one was fetched (or once routing is off)."""
        with self._lock:
            return None if self._table is None else self._table.revision

    def first_fetch_due(self) -> bool:
        return self._enabled and self._table is None and self._stale

    def holder(self, tenant: str, store: str) -> Optional[str]:
        """The address of the store's holder, None when the call stays on the given member (no
        table, no holder, or the given member holds it)."""
        table = self._table  # replaced whole, never changed in place but by apply
        if not self._enabled or table is None:
            return None
        shard = store_shard(tenant, store, table.shards)
        with self._lock:
            address = table.holder_address(shard)
        return None if address == self.given else address

    def observe(self, hint: Optional[str], code: Any, routed: bool) -> bool:
        """After a call (`routed`: sent to a holder) ended with `code` and the holder header
        `hint`: takes the hint, marks the table stale on a changed holder or a holder's
        UNAVAILABLE; True when a refetch is due."""
        if hint is None and not (routed and code == grpc.StatusCode.UNAVAILABLE) and \
                not self._stale:
            return False  # the common answer: nothing learned, nothing due
        with self._lock:
            if not self._enabled:
                return False
            if hint is not None and self._table is not None:
                try:
                    parsed = parse_holder_hint(hint, self._table.shards)
                except ValueError:
                    parsed = None  # a hint from another version: the table is still right
                if parsed is not None and self._table.apply(parsed):
                    self._stale = True
            if routed and code == grpc.StatusCode.UNAVAILABLE:
                self._stale = True
            return self._stale

    def begin_fetch(self) -> bool:
        """Claims the refetch when one is allowed now (none running, the last a second ago or
        more); the caller then fetches and calls end_fetch."""
        with self._lock:
            now = self._clock()
            if not self._enabled or self._fetching or now - self._last_fetch < \
                    REFETCH_INTERVAL_S:
                return False
            self._fetching = True
            self._last_fetch = now
            return True

    def end_fetch(self, response: Any = None, code: Any = None) -> None:
        """The fetch's answer: a ClusterRoutesResponse, or the status code it failed with.
        UNIMPLEMENTED (a single server) turns routing off; any other failure keeps the table it
        had (or none) and leaves the refetch due."""
        table = None
        if response is not None:
            try:
                table = RouteTable(response)
            except ValueError:
                table = None
        with self._lock:
            self._fetching = False
            if table is not None:
                self._table = table
                self._stale = False
            elif code == grpc.StatusCode.UNIMPLEMENTED:
                self._enabled = False
                self._table = None
