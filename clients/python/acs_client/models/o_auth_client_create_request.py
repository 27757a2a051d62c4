from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="OAuthClientCreateRequest")


@_attrs_define
class OAuthClientCreateRequest:
    """
    Attributes:
        name (str):
        redirect_uris (list[str]): `https` URLs, or `http` on `localhost` / `127.0.0.1` (any port); no fragment.
    """

    name: str
    redirect_uris: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        redirect_uris = self.redirect_uris

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "redirect_uris": redirect_uris,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        redirect_uris = cast(list[str], d.pop("redirect_uris"))

        o_auth_client_create_request = cls(
            name=name,
            redirect_uris=redirect_uris,
        )

        o_auth_client_create_request.additional_properties = d
        return o_auth_client_create_request

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
