from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.image_media_type import ImageMediaType

T = TypeVar("T", bound="AvatarRequest")


@_attrs_define
class AvatarRequest:
    """The avatar as JSON; the raw form sends the image itself with its image content type.

    Attributes:
        data (str): The image, base64; 1 byte to 10 MB decoded.
        media_type (ImageMediaType): The image's media type.
    """

    data: str
    media_type: ImageMediaType
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = self.data

        media_type = self.media_type.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "data": data,
                "media_type": media_type,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        data = d.pop("data")

        media_type = ImageMediaType(d.pop("media_type"))

        avatar_request = cls(
            data=data,
            media_type=media_type,
        )

        avatar_request.additional_properties = d
        return avatar_request

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
