from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="AdminCompRequest")


@_attrs_define
class AdminCompRequest:
    """
    Attributes:
        comped (bool):
    """

    comped: bool

    def to_dict(self) -> dict[str, Any]:
        comped = self.comped

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "comped": comped,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        comped = d.pop("comped")

        admin_comp_request = cls(
            comped=comped,
        )

        return admin_comp_request
