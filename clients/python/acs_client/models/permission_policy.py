from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.permission_policy_additional_property import PermissionPolicyAdditionalProperty
from ..types import UNSET, Unset

T = TypeVar("T", bound="PermissionPolicy")


@_attrs_define
class PermissionPolicy:
    """Tool title or ACP tool kind (or `default`) -> `auto_allow`, `ask` or `auto_deny`.

    Attributes:
        ask_timeout (int | Unset): Seconds an `ask` waits for an answer.
    """

    ask_timeout: int | Unset = UNSET
    additional_properties: dict[str, PermissionPolicyAdditionalProperty] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        ask_timeout = self.ask_timeout

        field_dict: dict[str, Any] = {}
        for prop_name, prop in self.additional_properties.items():
            field_dict[prop_name] = prop.value

        field_dict.update({})
        if ask_timeout is not UNSET:
            field_dict["ask_timeout"] = ask_timeout

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        ask_timeout = d.pop("ask_timeout", UNSET)

        permission_policy = cls(
            ask_timeout=ask_timeout,
        )

        additional_properties = {}
        for prop_name, prop_dict in d.items():
            additional_property = PermissionPolicyAdditionalProperty(prop_dict)

            additional_properties[prop_name] = additional_property

        permission_policy.additional_properties = additional_properties
        return permission_policy

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> PermissionPolicyAdditionalProperty:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: PermissionPolicyAdditionalProperty) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
