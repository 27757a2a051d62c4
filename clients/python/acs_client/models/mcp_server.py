from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="McpServer")


@_attrs_define
class McpServer:
    """
    Attributes:
        dcr (bool):
        name (str):
        slug (str):
        url (str):
        verified_on (str):
    """

    dcr: bool
    name: str
    slug: str
    url: str
    verified_on: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        dcr = self.dcr

        name = self.name

        slug = self.slug

        url = self.url

        verified_on = self.verified_on

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "dcr": dcr,
                "name": name,
                "slug": slug,
                "url": url,
                "verified_on": verified_on,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        dcr = d.pop("dcr")

        name = d.pop("name")

        slug = d.pop("slug")

        url = d.pop("url")

        verified_on = d.pop("verified_on")

        mcp_server = cls(
            dcr=dcr,
            name=name,
            slug=slug,
            url=url,
            verified_on=verified_on,
        )

        mcp_server.additional_properties = d
        return mcp_server

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
