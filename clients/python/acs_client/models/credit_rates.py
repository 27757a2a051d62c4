from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="CreditRates")


@_attrs_define
class CreditRates:
    """What each kind of spending costs.

    Attributes:
        platform_turn (int): Per turn on the deployment's platform credentials.
        sandbox_per_second (int): Per whole second a hosted sandbox is active (pending, starting or ready).
    """

    platform_turn: int
    sandbox_per_second: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        platform_turn = self.platform_turn

        sandbox_per_second = self.sandbox_per_second

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "platform_turn": platform_turn,
                "sandbox_per_second": sandbox_per_second,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        platform_turn = d.pop("platform_turn")

        sandbox_per_second = d.pop("sandbox_per_second")

        credit_rates = cls(
            platform_turn=platform_turn,
            sandbox_per_second=sandbox_per_second,
        )

        credit_rates.additional_properties = d
        return credit_rates

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
