from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ExecutionLimits")


@_attrs_define
class ExecutionLimits:
    """Limits of a turn or conversation; 422 `execution_limits_invalid` on another key.

    Attributes:
        max_output_tokens (int | Unset):
        max_turn_seconds (int | Unset):
        max_turns (int | Unset):
    """

    max_output_tokens: int | Unset = UNSET
    max_turn_seconds: int | Unset = UNSET
    max_turns: int | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        max_output_tokens = self.max_output_tokens

        max_turn_seconds = self.max_turn_seconds

        max_turns = self.max_turns

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if max_output_tokens is not UNSET:
            field_dict["max_output_tokens"] = max_output_tokens
        if max_turn_seconds is not UNSET:
            field_dict["max_turn_seconds"] = max_turn_seconds
        if max_turns is not UNSET:
            field_dict["max_turns"] = max_turns

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        max_output_tokens = d.pop("max_output_tokens", UNSET)

        max_turn_seconds = d.pop("max_turn_seconds", UNSET)

        max_turns = d.pop("max_turns", UNSET)

        execution_limits = cls(
            max_output_tokens=max_output_tokens,
            max_turn_seconds=max_turn_seconds,
            max_turns=max_turns,
        )

        return execution_limits
