from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Empty(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ProductRequest(_message.Message):
    __slots__ = ("product_id",)
    PRODUCT_ID_FIELD_NUMBER: _ClassVar[int]
    product_id: int
    def __init__(self, product_id: _Optional[int] = ...) -> None: ...

class CustomerRequest(_message.Message):
    __slots__ = ("customer_id",)
    CUSTOMER_ID_FIELD_NUMBER: _ClassVar[int]
    customer_id: int
    def __init__(self, customer_id: _Optional[int] = ...) -> None: ...

class Product(_message.Message):
    __slots__ = ("product_id", "name", "price", "description", "color", "image_url")
    PRODUCT_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PRICE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    COLOR_FIELD_NUMBER: _ClassVar[int]
    IMAGE_URL_FIELD_NUMBER: _ClassVar[int]
    product_id: int
    name: str
    price: float
    description: str
    color: str
    image_url: str
    def __init__(self, product_id: _Optional[int] = ..., name: _Optional[str] = ..., price: _Optional[float] = ..., description: _Optional[str] = ..., color: _Optional[str] = ..., image_url: _Optional[str] = ...) -> None: ...

class Review(_message.Message):
    __slots__ = ("review_id", "customer_id", "rating", "title", "body")
    REVIEW_ID_FIELD_NUMBER: _ClassVar[int]
    CUSTOMER_ID_FIELD_NUMBER: _ClassVar[int]
    RATING_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    review_id: int
    customer_id: int
    rating: int
    title: str
    body: str
    def __init__(self, review_id: _Optional[int] = ..., customer_id: _Optional[int] = ..., rating: _Optional[int] = ..., title: _Optional[str] = ..., body: _Optional[str] = ...) -> None: ...

class Reviews(_message.Message):
    __slots__ = ("reviews",)
    REVIEWS_FIELD_NUMBER: _ClassVar[int]
    reviews: _containers.RepeatedCompositeFieldContainer[Review]
    def __init__(self, reviews: _Optional[_Iterable[_Union[Review, _Mapping]]] = ...) -> None: ...

class Recommendation(_message.Message):
    __slots__ = ("product_id", "name", "price")
    PRODUCT_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PRICE_FIELD_NUMBER: _ClassVar[int]
    product_id: int
    name: str
    price: float
    def __init__(self, product_id: _Optional[int] = ..., name: _Optional[str] = ..., price: _Optional[float] = ...) -> None: ...

class Recommendations(_message.Message):
    __slots__ = ("recommendations",)
    RECOMMENDATIONS_FIELD_NUMBER: _ClassVar[int]
    recommendations: _containers.RepeatedCompositeFieldContainer[Recommendation]
    def __init__(self, recommendations: _Optional[_Iterable[_Union[Recommendation, _Mapping]]] = ...) -> None: ...

class ShippingOption(_message.Message):
    __slots__ = ("carrier", "method", "price", "min_days", "max_days")
    CARRIER_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    PRICE_FIELD_NUMBER: _ClassVar[int]
    MIN_DAYS_FIELD_NUMBER: _ClassVar[int]
    MAX_DAYS_FIELD_NUMBER: _ClassVar[int]
    carrier: str
    method: str
    price: float
    min_days: int
    max_days: int
    def __init__(self, carrier: _Optional[str] = ..., method: _Optional[str] = ..., price: _Optional[float] = ..., min_days: _Optional[int] = ..., max_days: _Optional[int] = ...) -> None: ...

class Shipping(_message.Message):
    __slots__ = ("options",)
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    options: _containers.RepeatedCompositeFieldContainer[ShippingOption]
    def __init__(self, options: _Optional[_Iterable[_Union[ShippingOption, _Mapping]]] = ...) -> None: ...

class CartItem(_message.Message):
    __slots__ = ("product_id", "name", "quantity", "unit_price")
    PRODUCT_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    QUANTITY_FIELD_NUMBER: _ClassVar[int]
    UNIT_PRICE_FIELD_NUMBER: _ClassVar[int]
    product_id: int
    name: str
    quantity: int
    unit_price: float
    def __init__(self, product_id: _Optional[int] = ..., name: _Optional[str] = ..., quantity: _Optional[int] = ..., unit_price: _Optional[float] = ...) -> None: ...

class Cart(_message.Message):
    __slots__ = ("customer_id", "items", "total")
    CUSTOMER_ID_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    customer_id: int
    items: _containers.RepeatedCompositeFieldContainer[CartItem]
    total: float
    def __init__(self, customer_id: _Optional[int] = ..., items: _Optional[_Iterable[_Union[CartItem, _Mapping]]] = ..., total: _Optional[float] = ...) -> None: ...

class CartReply(_message.Message):
    __slots__ = ("cart",)
    CART_FIELD_NUMBER: _ClassVar[int]
    cart: Cart
    def __init__(self, cart: _Optional[_Union[Cart, _Mapping]] = ...) -> None: ...
