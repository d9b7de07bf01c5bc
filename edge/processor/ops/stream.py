"""Stateless KStream operators: each processor does one thing to a record and forwards the result."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from edge.processor.api import Processor, ProcessorContext
from edge.processor.context import forward_all
from edge.processor.ops.dropped import skip_record
from edge.processor.record import Record

_new = object.__new__


class _Forwarding(Processor):
    """Keeps the context's ``forward`` as a bound method so the per-record path is one call."""

    _forward: Callable[[Record], None]

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._forward = forward_all(context)


class KStreamFilter(_Forwarding):
    def __init__(self, predicate: Callable[[Any, Any], bool], negate: bool = False) -> None:
        self._predicate = predicate
        self._negate = negate

    def process(self, record: Record) -> None:
        if bool(self._predicate(record.key, record.value)) is not self._negate:
            self._forward(record)


class KStreamNullKeyFilter(_Forwarding):
    """Drops records without a key before a repartition topic (they could not be partitioned): logged
    and counted in the dropped-records metric."""

    def process(self, record: Record) -> None:
        if record.key is not None:
            self._forward(record)
        else:
            skip_record(self.context, "null key (a repartition topic needs a key)")


class KStreamMap(_Forwarding):
    def __init__(self, mapper: Callable[[Any, Any], tuple[Any, Any]]) -> None:
        self._mapper = mapper

    def process(self, record: Record) -> None:
        key, value = self._mapper(record.key, record.value)
        self._forward(Record(key, value, record.timestamp, record.headers))


class KStreamSelectKey(_Forwarding):
    def __init__(self, mapper: Callable[[Any, Any], Any]) -> None:
        self._mapper = mapper

    def process(self, record: Record) -> None:
        self._forward(
            Record(self._mapper(record.key, record.value), record.value, record.timestamp, record.headers)
        )


class KStreamMapValues(_Forwarding):
    def __init__(self, mapper: Callable[..., Any], with_key: bool = False) -> None:
        self._mapper = mapper
        self._with_key = with_key

    def process(self, record: Record) -> None:
        key = record.key
        out = _new(Record)  # Record(key, mapped, timestamp, headers) without the __init__ frame
        out.key = key
        out.value = self._mapper(key, record.value) if self._with_key else self._mapper(record.value)
        out.timestamp = record.timestamp
        out.headers = record.headers
        self._forward(out)


class KStreamFlatMap(_Forwarding):
    def __init__(self, mapper: Callable[[Any, Any], Iterable[tuple[Any, Any]]]) -> None:
        self._mapper = mapper

    def process(self, record: Record) -> None:
        ts, headers, forward = record.timestamp, record.headers, self._forward
        for key, value in self._mapper(record.key, record.value):
            forward(Record(key, value, ts, headers))


class KStreamFlatMapValues(_Forwarding):
    def __init__(self, mapper: Callable[..., Iterable[Any]], with_key: bool = False) -> None:
        self._mapper = mapper
        self._with_key = with_key

    def process(self, record: Record) -> None:
        key, ts, headers, forward = record.key, record.timestamp, record.headers, self._forward
        values = self._mapper(key, record.value) if self._with_key else self._mapper(record.value)
        for value in values:
            forward(Record(key, value, ts, headers))


class KStreamPeek(_Forwarding):
    """``peek`` (forwards) and ``foreach`` (terminal) share this: call an action for its side effect."""

    def __init__(self, action: Callable[[Any, Any], None], forward: bool = True) -> None:
        self._action = action
        self._forward_downstream = forward

    def process(self, record: Record) -> None:
        self._action(record.key, record.value)
        if self._forward_downstream:
            self._forward(record)


class KStreamPassThrough(_Forwarding):
    """Merge points and branch outputs: a named node that forwards unchanged."""

    def process(self, record: Record) -> None:
        self._forward(record)


class KStreamBranch(Processor):
    """Sends each record to the first branch whose predicate matches, else to the default branch."""

    def __init__(
        self, predicates: list[Callable[[Any, Any], bool]], children: list[str], default: str | None
    ):
        self._branches = list(zip(predicates, children, strict=True))
        self._default = default

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        named = context._named  # type: ignore[attr-defined]
        self._targets = [(pred, named[child]) for pred, child in self._branches]
        self._default_target = named[self._default] if self._default is not None else None

    def process(self, record: Record) -> None:
        key, value = record.key, record.value
        for predicate, target in self._targets:
            if predicate(key, value):
                target(record)
                return
        if self._default_target is not None:
            self._default_target(record)
