from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="PermissionAnswerRequest")


@_attrs_define
class PermissionAnswerRequest:
    """`PermissionAnswerRequest`: one of the `optionId` values offered on the `permission_request` block.

    Attributes:
        option_id (str):
    """

    option_id: str

    def to_dict(self) -> dict[str, Any]:
        option_id = self.option_id

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "option_id": option_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        option_id = d.pop("option_id")

        permission_answer_request = cls(
            option_id=option_id,
        )

        return permission_answer_request
