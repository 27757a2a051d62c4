from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.subscription import Subscription


T = TypeVar("T", bound="SubscriptionList")


@_attrs_define
class SubscriptionList:
    """The list answer: not paginated.

    Attributes:
        count (int): Subscriptions held, disconnected ones included.
        data (list[Subscription]):
        limit (int): How many the account may hold.
        linking_enabled (bool): Whether a new link may be started now (flag and broker on).
    """

    count: int
    data: list[Subscription]
    limit: int
    linking_enabled: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        count = self.count

        data = []
        for data_item_data in self.data:
            data_item = data_item_data.to_dict()
            data.append(data_item)

        limit = self.limit

        linking_enabled = self.linking_enabled

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "count": count,
                "data": data,
                "limit": limit,
                "linking_enabled": linking_enabled,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.subscription import Subscription  # noqa: PLC0415

        d = dict(src_dict)
        count = d.pop("count")

        data = []
        _data = d.pop("data")
        for data_item_data in _data:
            data_item = Subscription.from_dict(data_item_data)

            data.append(data_item)

        limit = d.pop("limit")

        linking_enabled = d.pop("linking_enabled")

        subscription_list = cls(
            count=count,
            data=data,
            limit=limit,
            linking_enabled=linking_enabled,
        )

        subscription_list.additional_properties = d
        return subscription_list

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
