from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Empty(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Person(_message.Message):
    __slots__ = ("id", "name")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class Animal(_message.Message):
    __slots__ = ("type", "name")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    type: str
    name: str
    def __init__(self, type: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class Car(_message.Message):
    __slots__ = ("model", "color")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    COLOR_FIELD_NUMBER: _ClassVar[int]
    model: str
    color: str
    def __init__(self, model: _Optional[str] = ..., color: _Optional[str] = ...) -> None: ...

class Building(_message.Message):
    __slots__ = ("address", "department")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    DEPARTMENT_FIELD_NUMBER: _ClassVar[int]
    address: str
    department: str
    def __init__(self, address: _Optional[str] = ..., department: _Optional[str] = ...) -> None: ...

class Persons(_message.Message):
    __slots__ = ("rows",)
    ROWS_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedCompositeFieldContainer[Person]
    def __init__(self, rows: _Optional[_Iterable[_Union[Person, _Mapping]]] = ...) -> None: ...

class Animals(_message.Message):
    __slots__ = ("rows",)
    ROWS_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedCompositeFieldContainer[Animal]
    def __init__(self, rows: _Optional[_Iterable[_Union[Animal, _Mapping]]] = ...) -> None: ...

class Cars(_message.Message):
    __slots__ = ("rows",)
    ROWS_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedCompositeFieldContainer[Car]
    def __init__(self, rows: _Optional[_Iterable[_Union[Car, _Mapping]]] = ...) -> None: ...

class Buildings(_message.Message):
    __slots__ = ("rows",)
    ROWS_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedCompositeFieldContainer[Building]
    def __init__(self, rows: _Optional[_Iterable[_Union[Building, _Mapping]]] = ...) -> None: ...

class Bundle(_message.Message):
    __slots__ = ("person", "animal", "car", "building")
    PERSON_FIELD_NUMBER: _ClassVar[int]
    ANIMAL_FIELD_NUMBER: _ClassVar[int]
    CAR_FIELD_NUMBER: _ClassVar[int]
    BUILDING_FIELD_NUMBER: _ClassVar[int]
    person: _containers.RepeatedCompositeFieldContainer[Person]
    animal: _containers.RepeatedCompositeFieldContainer[Animal]
    car: _containers.RepeatedCompositeFieldContainer[Car]
    building: _containers.RepeatedCompositeFieldContainer[Building]
    def __init__(self, person: _Optional[_Iterable[_Union[Person, _Mapping]]] = ..., animal: _Optional[_Iterable[_Union[Animal, _Mapping]]] = ..., car: _Optional[_Iterable[_Union[Car, _Mapping]]] = ..., building: _Optional[_Iterable[_Union[Building, _Mapping]]] = ...) -> None: ...
