from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.secret_binding import SecretBinding


T = TypeVar("T", bound="SecretBindingData")


@_attrs_define
class SecretBindingData:
    """The single-object and list envelope: `{data: ...}`.

    Attributes:
        data (SecretBinding): A secret binding: the broker adds `header: template` (with the source's
            value in place of `{value}`) to requests from the account's brokered
            machines to `host`. The value is never returned.
    """

    data: SecretBinding
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = self.data.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "data": data,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.secret_binding import SecretBinding  # noqa: PLC0415

        d = dict(src_dict)
        data = SecretBinding.from_dict(d.pop("data"))

        secret_binding_data = cls(
            data=data,
        )

        secret_binding_data.additional_properties = d
        return secret_binding_data

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
