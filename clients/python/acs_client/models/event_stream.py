from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="EventStream")


@_attrs_define
class EventStream:
    """Server-sent events (text/event-stream), open until the client leaves; this schema describes one event. Lines
    starting with `:` keep the connection alive.

        Attributes:
            data (str | Unset): JSON: a `StreamLogEvent` for a log event, `{"reason": "changed"}` for a signal.
            event (str | Unset): The frame's name (`event:` line): absent for a log event; a signal's kind (`conversations`,
                `team`, `schedule`) whose data is `{"reason": "changed"}`.
            id (str | Unset): The event id (`id:` line): send the last one seen as `Last-Event-ID` to resume. Absent on
                signal frames.
            retry (int | Unset):
    """

    data: str | Unset = UNSET
    event: str | Unset = UNSET
    id: str | Unset = UNSET
    retry: int | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = self.data

        event = self.event

        id = self.id

        retry = self.retry

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if data is not UNSET:
            field_dict["data"] = data
        if event is not UNSET:
            field_dict["event"] = event
        if id is not UNSET:
            field_dict["id"] = id
        if retry is not UNSET:
            field_dict["retry"] = retry

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        data = d.pop("data", UNSET)

        event = d.pop("event", UNSET)

        id = d.pop("id", UNSET)

        retry = d.pop("retry", UNSET)

        event_stream = cls(
            data=data,
            event=event,
            id=id,
            retry=retry,
        )

        event_stream.additional_properties = d
        return event_stream

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
