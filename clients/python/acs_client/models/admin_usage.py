from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="AdminUsage")


@_attrs_define
class AdminUsage:
    """What the account used.

    Attributes:
        conversations (int):
        conversations_30d (int): Conversations opened in the last 30 days.
        credits_spent_30d (int): Credits spent in the last 30 days (hosted sandbox time and turns on platform
            credentials).
    """

    conversations: int
    conversations_30d: int
    credits_spent_30d: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        conversations = self.conversations

        conversations_30d = self.conversations_30d

        credits_spent_30d = self.credits_spent_30d

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "conversations": conversations,
                "conversations_30d": conversations_30d,
                "credits_spent_30d": credits_spent_30d,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        conversations = d.pop("conversations")

        conversations_30d = d.pop("conversations_30d")

        credits_spent_30d = d.pop("credits_spent_30d")

        admin_usage = cls(
            conversations=conversations,
            conversations_30d=conversations_30d,
            credits_spent_30d=credits_spent_30d,
        )

        admin_usage.additional_properties = d
        return admin_usage

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
