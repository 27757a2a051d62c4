from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.page_order import PageOrder
from ..types import UNSET, Unset

T = TypeVar("T", bound="LogEventPage")


@_attrs_define
class LogEventPage:
    """Where a page sits in the log.

    Attributes:
        order (PageOrder): The page's order by event id.
        turn_split (bool): A turn longer than 5000 events was cut at the page's end.
        newest_cursor (int | None | Unset): On the first `desc` page: the `Last-Event-ID` to follow the stream from.
        oldest_cursor (int | None | Unset):
    """

    order: PageOrder
    turn_split: bool
    newest_cursor: int | None | Unset = UNSET
    oldest_cursor: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        order = self.order.value

        turn_split = self.turn_split

        newest_cursor: int | None | Unset
        if isinstance(self.newest_cursor, Unset):
            newest_cursor = UNSET
        else:
            newest_cursor = self.newest_cursor

        oldest_cursor: int | None | Unset
        if isinstance(self.oldest_cursor, Unset):
            oldest_cursor = UNSET
        else:
            oldest_cursor = self.oldest_cursor

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "order": order,
                "turn_split": turn_split,
            }
        )
        if newest_cursor is not UNSET:
            field_dict["newest_cursor"] = newest_cursor
        if oldest_cursor is not UNSET:
            field_dict["oldest_cursor"] = oldest_cursor

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        order = PageOrder(d.pop("order"))

        turn_split = d.pop("turn_split")

        def _parse_newest_cursor(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        newest_cursor = _parse_newest_cursor(d.pop("newest_cursor", UNSET))

        def _parse_oldest_cursor(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        oldest_cursor = _parse_oldest_cursor(d.pop("oldest_cursor", UNSET))

        log_event_page = cls(
            order=order,
            turn_split=turn_split,
            newest_cursor=newest_cursor,
            oldest_cursor=oldest_cursor,
        )

        log_event_page.additional_properties = d
        return log_event_page

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
