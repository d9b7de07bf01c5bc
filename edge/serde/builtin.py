"""Built-in serdes.

Hot-path notes: each method is a plain bound method doing one C call (``struct`` / ``orjson`` / codec)
inside a ``try`` (free in CPython 3.11 unless it raises); no per-call allocation beyond the result.
Fixed-width numbers are big-endian to be byte-compatible with Kafka's Java serializers.
"""

from __future__ import annotations

import dataclasses
import struct
import typing
from typing import Any, Generic, TypeVar

import orjson

from edge.errors import SerdeError

T = TypeVar("T")

_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_FLOAT = struct.Struct(">f")
_DOUBLE = struct.Struct(">d")

_JSON_OPTS = orjson.OPT_NON_STR_KEYS


def _ser_error(kind: str, topic: str, value: object, exc: BaseException) -> SerdeError:
    err = SerdeError(
        f"cannot serialize {type(value).__name__} value with the {kind} serde: {exc}; "
        f"use a serde matching the value type",
        topic=topic,
    )
    err.__cause__ = exc
    return err


def _de_error(kind: str, topic: str, data: bytes, exc: BaseException) -> SerdeError:
    preview = bytes(data[:32])
    err = SerdeError(
        f"cannot deserialize {len(data)} bytes ({preview!r}...) with the {kind} serde: {exc}; "
        f"check the topic's data format or the serde configured for it",
        topic=topic,
    )
    err.__cause__ = exc
    return err


class BytesSerde:
    """Identity serde; accepts bytes/bytearray/memoryview when serializing."""

    __slots__ = ()

    def serialize(self, topic: str, value: bytes | None) -> bytes | None:
        if value is None or value.__class__ is bytes:
            return value
        try:
            return bytes(value)  # bytearray / memoryview
        except TypeError as exc:
            raise _ser_error("bytes", topic, value, exc) from exc

    def deserialize(self, topic: str, data: bytes | None) -> bytes | None:
        return data

    def __repr__(self) -> str:
        return "Serdes.bytes()"


class StringSerde:
    """UTF-8 strings (Kafka StringSerializer)."""

    __slots__ = ()

    def serialize(self, topic: str, value: str | None) -> bytes | None:
        if value is None:
            return None
        try:
            return value.encode()
        except (AttributeError, UnicodeEncodeError) as exc:
            raise _ser_error("string", topic, value, exc) from exc

    def deserialize(self, topic: str, data: bytes | None) -> str | None:
        if data is None:
            return None
        try:
            return data.decode()
        except (UnicodeDecodeError, AttributeError) as exc:
            raise _de_error("string", topic, data, exc) from exc

    def __repr__(self) -> str:
        return "Serdes.string()"


class _StructSerde:
    """Fixed-width number serde on a precompiled ``struct.Struct``."""

    __slots__ = ("_kind", "_pack", "_unpack")

    def __init__(self, fmt: struct.Struct, kind: str) -> None:
        self._pack = fmt.pack
        self._unpack = fmt.unpack
        self._kind = kind

    def serialize(self, topic: str, value: Any) -> bytes | None:
        if value is None:
            return None
        try:
            return self._pack(value)
        except struct.error as exc:
            raise _ser_error(self._kind, topic, value, exc) from exc

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            return self._unpack(data)[0]
        except (struct.error, TypeError) as exc:
            raise _de_error(self._kind, topic, data, exc) from exc

    def __repr__(self) -> str:
        return f"Serdes.{self._kind}()"


class IntSerde(_StructSerde):
    """32-bit signed big-endian (Kafka IntegerSerializer)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(_INT, "int")


class LongSerde(_StructSerde):
    """64-bit signed big-endian (Kafka LongSerializer)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(_LONG, "long")


class FloatSerde(_StructSerde):
    """32-bit IEEE-754 big-endian (Kafka FloatSerializer); note the precision loss vs Python float."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(_FLOAT, "float")


class DoubleSerde(_StructSerde):
    """64-bit IEEE-754 big-endian (Kafka DoubleSerializer)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(_DOUBLE, "double")


class JsonSerde:
    """JSON via orjson. Deserializes to plain dict/list/str/int/float/bool.

    Non-string dict keys are allowed when serializing (they come back as strings).
    """

    __slots__ = ()

    def serialize(self, topic: str, value: Any) -> bytes | None:
        if value is None:
            return None
        try:
            return orjson.dumps(value, option=_JSON_OPTS)
        except TypeError as exc:  # orjson.JSONEncodeError subclasses TypeError
            raise _ser_error("json", topic, value, exc) from exc

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            return orjson.loads(data)
        except (orjson.JSONDecodeError, TypeError) as exc:
            raise _de_error("json", topic, data, exc) from exc

    def __repr__(self) -> str:
        return "Serdes.json()"


_SIMPLE_TYPES = (int, float, str, bool, dict, list, Any, type(None))


def _is_simple(tp: Any) -> bool:
    """True if a field type is a JSON-native type that needs no conversion after ``orjson.loads``."""
    if tp in _SIMPLE_TYPES:
        return True
    origin = typing.get_origin(tp)
    if origin in (dict, list):
        return all(_is_simple(a) for a in typing.get_args(tp))
    if origin is typing.Union or (origin is not None and getattr(origin, "__name__", "") == "UnionType"):
        return all(_is_simple(a) for a in typing.get_args(tp))
    import types

    if isinstance(tp, types.UnionType):
        return all(_is_simple(a) for a in typing.get_args(tp))
    return False


class DataclassSerde(Generic[T]):
    """A dataclass as a JSON object.

    Flat dataclasses whose fields are JSON-native (int/float/str/bool/dict/list/Optional) decode with the
    fast ``cls(**orjson.loads(data))``; anything richer (nested dataclasses, datetimes, tuples, enums)
    goes through a pydantic ``TypeAdapter`` so nested values are rebuilt and validated.
    """

    __slots__ = ("_adapter", "_cls", "_fast")

    def __init__(self, cls: type[T]) -> None:
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise TypeError(f"Serdes.dataclass() needs a dataclass type, got {cls!r}")
        self._cls = cls
        try:
            hints = typing.get_type_hints(cls)
        except Exception:  # unresolved forward refs: take the general path
            hints = None
        fields = dataclasses.fields(cls)
        self._fast = hints is not None and all(f.init and _is_simple(hints.get(f.name, Any)) for f in fields)
        self._adapter = None
        if not self._fast:
            import pydantic

            self._adapter = pydantic.TypeAdapter(cls)

    def serialize(self, topic: str, value: T | None) -> bytes | None:
        if value is None:
            return None
        try:
            return orjson.dumps(value, option=_JSON_OPTS)
        except TypeError as exc:
            raise _ser_error(f"dataclass({self._cls.__name__})", topic, value, exc) from exc

    def deserialize(self, topic: str, data: bytes | None) -> T | None:
        if data is None:
            return None
        try:
            if self._fast:
                return self._cls(**orjson.loads(data))
            return self._adapter.validate_json(data)  # type: ignore[union-attr]
        except Exception as exc:  # JSONDecodeError, TypeError (fields), pydantic ValidationError
            raise _de_error(f"dataclass({self._cls.__name__})", topic, data, exc) from exc

    def __repr__(self) -> str:
        return f"Serdes.dataclass({self._cls.__name__})"


class PydanticSerde(Generic[T]):
    """A pydantic v2 model as JSON, using the model's compiled (Rust) serializer and validator."""

    __slots__ = ("_model", "_to_json", "_validate_json")

    def __init__(self, model: type[T]) -> None:
        import pydantic

        if not (isinstance(model, type) and issubclass(model, pydantic.BaseModel)):
            raise TypeError(f"Serdes.pydantic() needs a pydantic BaseModel subclass, got {model!r}")
        self._model = model
        self._to_json = model.__pydantic_serializer__.to_json
        self._validate_json = model.__pydantic_validator__.validate_json

    def serialize(self, topic: str, value: T | None) -> bytes | None:
        if value is None:
            return None
        try:
            return self._to_json(value)
        except Exception as exc:  # PydanticSerializationError
            raise _ser_error(f"pydantic({self._model.__name__})", topic, value, exc) from exc

    def deserialize(self, topic: str, data: bytes | None) -> T | None:
        if data is None:
            return None
        try:
            return self._validate_json(data)
        except Exception as exc:  # ValidationError
            raise _de_error(f"pydantic({self._model.__name__})", topic, data, exc) from exc

    def __repr__(self) -> str:
        return f"Serdes.pydantic({self._model.__name__})"


_BYTES = BytesSerde()
_STRING = StringSerde()
_INT_SERDE = IntSerde()
_LONG_SERDE = LongSerde()
_FLOAT_SERDE = FloatSerde()
_DOUBLE_SERDE = DoubleSerde()
_JSON = JsonSerde()


class Serdes:
    """Factory of the built-in serdes. Stateless ones are shared singletons."""

    @staticmethod
    def bytes() -> BytesSerde:
        return _BYTES

    @staticmethod
    def string() -> StringSerde:
        return _STRING

    @staticmethod
    def int() -> IntSerde:
        return _INT_SERDE

    @staticmethod
    def long() -> LongSerde:
        return _LONG_SERDE

    @staticmethod
    def float() -> FloatSerde:
        return _FLOAT_SERDE

    @staticmethod
    def double() -> DoubleSerde:
        return _DOUBLE_SERDE

    @staticmethod
    def json() -> JsonSerde:
        return _JSON

    @staticmethod
    def dataclass(cls: type[T]) -> DataclassSerde[T]:
        return DataclassSerde(cls)

    @staticmethod
    def pydantic(model: type[T]) -> PydanticSerde[T]:
        return PydanticSerde(model)
