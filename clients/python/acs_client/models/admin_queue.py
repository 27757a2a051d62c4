from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="AdminQueue")


@_attrs_define
class AdminQueue:
    """
    Attributes:
        depth (int): Starts waiting for capacity, every account.
        oldest_queued_at (datetime.datetime | None | Unset): When the longest-waiting one was queued.
    """

    depth: int
    oldest_queued_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        depth = self.depth

        oldest_queued_at: None | str | Unset
        if isinstance(self.oldest_queued_at, Unset):
            oldest_queued_at = UNSET
        elif isinstance(self.oldest_queued_at, datetime.datetime):
            oldest_queued_at = self.oldest_queued_at.isoformat()
        else:
            oldest_queued_at = self.oldest_queued_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "depth": depth,
            }
        )
        if oldest_queued_at is not UNSET:
            field_dict["oldest_queued_at"] = oldest_queued_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        depth = d.pop("depth")

        def _parse_oldest_queued_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                oldest_queued_at_type_0 = datetime.datetime.fromisoformat(data)

                return oldest_queued_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        oldest_queued_at = _parse_oldest_queued_at(d.pop("oldest_queued_at", UNSET))

        admin_queue = cls(
            depth=depth,
            oldest_queued_at=oldest_queued_at,
        )

        admin_queue.additional_properties = d
        return admin_queue

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
