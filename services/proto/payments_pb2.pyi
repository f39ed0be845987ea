from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Item(_message.Message):
    __slots__ = ("name", "sku", "price", "currency", "quantity")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SKU_FIELD_NUMBER: _ClassVar[int]
    PRICE_FIELD_NUMBER: _ClassVar[int]
    CURRENCY_FIELD_NUMBER: _ClassVar[int]
    QUANTITY_FIELD_NUMBER: _ClassVar[int]
    name: str
    sku: str
    price: float
    currency: str
    quantity: int
    def __init__(self, name: _Optional[str] = ..., sku: _Optional[str] = ..., price: _Optional[float] = ..., currency: _Optional[str] = ..., quantity: _Optional[int] = ...) -> None: ...

class Address(_message.Message):
    __slots__ = ("recipientName", "line1", "line2", "state", "phone", "postalCode", "countryCode")
    RECIPIENTNAME_FIELD_NUMBER: _ClassVar[int]
    LINE1_FIELD_NUMBER: _ClassVar[int]
    LINE2_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PHONE_FIELD_NUMBER: _ClassVar[int]
    POSTALCODE_FIELD_NUMBER: _ClassVar[int]
    COUNTRYCODE_FIELD_NUMBER: _ClassVar[int]
    recipientName: str
    line1: str
    line2: str
    state: str
    phone: str
    postalCode: str
    countryCode: str
    def __init__(self, recipientName: _Optional[str] = ..., line1: _Optional[str] = ..., line2: _Optional[str] = ..., state: _Optional[str] = ..., phone: _Optional[str] = ..., postalCode: _Optional[str] = ..., countryCode: _Optional[str] = ...) -> None: ...

class Transaction(_message.Message):
    __slots__ = ("description", "items", "shippingAddress", "subtotal", "tax", "shipping")
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    SHIPPINGADDRESS_FIELD_NUMBER: _ClassVar[int]
    SUBTOTAL_FIELD_NUMBER: _ClassVar[int]
    TAX_FIELD_NUMBER: _ClassVar[int]
    SHIPPING_FIELD_NUMBER: _ClassVar[int]
    description: str
    items: _containers.RepeatedCompositeFieldContainer[Item]
    shippingAddress: Address
    subtotal: float
    tax: float
    shipping: float
    def __init__(self, description: _Optional[str] = ..., items: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., shippingAddress: _Optional[_Union[Address, _Mapping]] = ..., subtotal: _Optional[float] = ..., tax: _Optional[float] = ..., shipping: _Optional[float] = ...) -> None: ...

class Payment(_message.Message):
    __slots__ = ("id", "createTime", "updateTime", "paymentState", "payer", "transactions")
    class PaymentState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        APPROVED: _ClassVar[Payment.PaymentState]
        DECLINED: _ClassVar[Payment.PaymentState]
    APPROVED: Payment.PaymentState
    DECLINED: Payment.PaymentState
    ID_FIELD_NUMBER: _ClassVar[int]
    CREATETIME_FIELD_NUMBER: _ClassVar[int]
    UPDATETIME_FIELD_NUMBER: _ClassVar[int]
    PAYMENTSTATE_FIELD_NUMBER: _ClassVar[int]
    PAYER_FIELD_NUMBER: _ClassVar[int]
    TRANSACTIONS_FIELD_NUMBER: _ClassVar[int]
    id: str
    createTime: str
    updateTime: str
    paymentState: Payment.PaymentState
    payer: str
    transactions: _containers.RepeatedCompositeFieldContainer[Transaction]
    def __init__(self, id: _Optional[str] = ..., createTime: _Optional[str] = ..., updateTime: _Optional[str] = ..., paymentState: _Optional[_Union[Payment.PaymentState, str]] = ..., payer: _Optional[str] = ..., transactions: _Optional[_Iterable[_Union[Transaction, _Mapping]]] = ...) -> None: ...

class Payments(_message.Message):
    __slots__ = ("payments",)
    PAYMENTS_FIELD_NUMBER: _ClassVar[int]
    payments: _containers.RepeatedCompositeFieldContainer[Payment]
    def __init__(self, payments: _Optional[_Iterable[_Union[Payment, _Mapping]]] = ...) -> None: ...
