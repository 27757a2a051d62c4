from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="TeamScheduleCreateRequest")


@_attrs_define
class TeamScheduleCreateRequest:
    """`TeamScheduleCreateRequest`.

    Attributes:
        cron (str): Five fields in UTC, or a name such as `@daily` (`@reboot` is refused).
        prompt (str): 1 to 20000 characters.
        enabled (bool | None | Unset): Default true.
        name (None | str | Unset): At most 120 characters.
        one_off (bool | None | Unset): Default false.
    """

    cron: str
    prompt: str
    enabled: bool | None | Unset = UNSET
    name: None | str | Unset = UNSET
    one_off: bool | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cron = self.cron

        prompt = self.prompt

        enabled: bool | None | Unset
        if isinstance(self.enabled, Unset):
            enabled = UNSET
        else:
            enabled = self.enabled

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        one_off: bool | None | Unset
        if isinstance(self.one_off, Unset):
            one_off = UNSET
        else:
            one_off = self.one_off

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cron": cron,
                "prompt": prompt,
            }
        )
        if enabled is not UNSET:
            field_dict["enabled"] = enabled
        if name is not UNSET:
            field_dict["name"] = name
        if one_off is not UNSET:
            field_dict["one_off"] = one_off

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        cron = d.pop("cron")

        prompt = d.pop("prompt")

        def _parse_enabled(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        enabled = _parse_enabled(d.pop("enabled", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        def _parse_one_off(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        one_off = _parse_one_off(d.pop("one_off", UNSET))

        team_schedule_create_request = cls(
            cron=cron,
            prompt=prompt,
            enabled=enabled,
            name=name,
            one_off=one_off,
        )

        team_schedule_create_request.additional_properties = d
        return team_schedule_create_request

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
