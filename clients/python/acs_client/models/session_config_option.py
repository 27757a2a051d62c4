from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="SessionConfigOption")


@_attrs_define
class SessionConfigOption:
    """An option the runtime advertised before the latest prompt.

    Attributes:
        id (str): The key to use in `session_config`
        category (str | Unset):
        current_value (Any | Unset): The value in force
        name (str | Unset):
        options (list[Any] | Unset):
        type_ (str | Unset): Such as `select` or `boolean`
    """

    id: str
    category: str | Unset = UNSET
    current_value: Any | Unset = UNSET
    name: str | Unset = UNSET
    options: list[Any] | Unset = UNSET
    type_: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        category = self.category

        current_value = self.current_value

        name = self.name

        options: list[Any] | Unset = UNSET
        if not isinstance(self.options, Unset):
            options = self.options

        type_ = self.type_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
            }
        )
        if category is not UNSET:
            field_dict["category"] = category
        if current_value is not UNSET:
            field_dict["currentValue"] = current_value
        if name is not UNSET:
            field_dict["name"] = name
        if options is not UNSET:
            field_dict["options"] = options
        if type_ is not UNSET:
            field_dict["type"] = type_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        category = d.pop("category", UNSET)

        current_value = d.pop("currentValue", UNSET)

        name = d.pop("name", UNSET)

        options = cast(list[Any], d.pop("options", UNSET))

        type_ = d.pop("type", UNSET)

        session_config_option = cls(
            id=id,
            category=category,
            current_value=current_value,
            name=name,
            options=options,
            type_=type_,
        )

        session_config_option.additional_properties = d
        return session_config_option

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
