from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="RunnerCreateRequest")


@_attrs_define
class RunnerCreateRequest:
    """
    Attributes:
        name (str): 1 to 64 letters, digits, `-` and `_`, starting with a letter or digit; unique in the account.
    """

    name: str

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        runner_create_request = cls(
            name=name,
        )

        return runner_create_request
