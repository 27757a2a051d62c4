from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.first_request_placeholders import FirstRequestPlaceholders


T = TypeVar("T", bound="FirstRequest")


@_attrs_define
class FirstRequest:
    """
    Attributes:
        curl (str):
        placeholders (FirstRequestPlaceholders):
        prompt (str):
        typescript (str):
    """

    curl: str
    placeholders: FirstRequestPlaceholders
    prompt: str
    typescript: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        curl = self.curl

        placeholders = self.placeholders.to_dict()

        prompt = self.prompt

        typescript = self.typescript

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "curl": curl,
                "placeholders": placeholders,
                "prompt": prompt,
                "typescript": typescript,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.first_request_placeholders import FirstRequestPlaceholders  # noqa: PLC0415

        d = dict(src_dict)
        curl = d.pop("curl")

        placeholders = FirstRequestPlaceholders.from_dict(d.pop("placeholders"))

        prompt = d.pop("prompt")

        typescript = d.pop("typescript")

        first_request = cls(
            curl=curl,
            placeholders=placeholders,
            prompt=prompt,
            typescript=typescript,
        )

        first_request.additional_properties = d
        return first_request

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
