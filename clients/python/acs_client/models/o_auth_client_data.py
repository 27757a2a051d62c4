from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.o_auth_client import OAuthClient


T = TypeVar("T", bound="OAuthClientData")


@_attrs_define
class OAuthClientData:
    """The single-object and list envelope: `{data: ...}`.

    Attributes:
        data (OAuthClient): A registered OAuth client (a public client: it proves itself with PKCE, not a secret).
    """

    data: OAuthClient
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
        from ..models.o_auth_client import OAuthClient  # noqa: PLC0415

        d = dict(src_dict)
        data = OAuthClient.from_dict(d.pop("data"))

        o_auth_client_data = cls(
            data=data,
        )

        o_auth_client_data.additional_properties = d
        return o_auth_client_data

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
