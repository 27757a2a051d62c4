from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.log_event import LogEvent
    from ..models.log_event_page import LogEventPage
    from ..models.page_meta import PageMeta


T = TypeVar("T", bound="LogEventListResponse")


@_attrs_define
class LogEventListResponse:
    """
    Attributes:
        data (list[LogEvent]):
        meta (PageMeta): Paging metadata of cursor-paged lists (the `meta` of the spec's list responses).
        page (LogEventPage): Where a page sits in the log.
    """

    data: list[LogEvent]
    meta: PageMeta
    page: LogEventPage
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = []
        for data_item_data in self.data:
            data_item = data_item_data.to_dict()
            data.append(data_item)

        meta = self.meta.to_dict()

        page = self.page.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "data": data,
                "meta": meta,
                "page": page,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.log_event import LogEvent  # noqa: PLC0415
        from ..models.log_event_page import LogEventPage  # noqa: PLC0415
        from ..models.page_meta import PageMeta  # noqa: PLC0415

        d = dict(src_dict)
        data = []
        _data = d.pop("data")
        for data_item_data in _data:
            data_item = LogEvent.from_dict(data_item_data)

            data.append(data_item)

        meta = PageMeta.from_dict(d.pop("meta"))

        page = LogEventPage.from_dict(d.pop("page"))

        log_event_list_response = cls(
            data=data,
            meta=meta,
            page=page,
        )

        log_event_list_response.additional_properties = d
        return log_event_list_response

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
