from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.category import Category
from ..models.screenshot_media_type import ScreenshotMediaType
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.support_report_request_context_type_0 import SupportReportRequestContextType0


T = TypeVar("T", bound="SupportReportRequest")


@_attrs_define
class SupportReportRequest:
    """
    Attributes:
        category (Category):
        message (str): 1 to 20000 characters.
        client (None | str | Unset): The reporting client, e.g. `acs-cli/0.1` (max 200).
        context (None | SupportReportRequestContextType0 | Unset): Free-form JSON object (max 64 KB).
        screenshot (None | str | Unset): Base64 image, at most 10 MB decoded; needs `screenshot_media_type`.
        screenshot_media_type (None | ScreenshotMediaType | Unset):
    """

    category: Category
    message: str
    client: None | str | Unset = UNSET
    context: None | SupportReportRequestContextType0 | Unset = UNSET
    screenshot: None | str | Unset = UNSET
    screenshot_media_type: None | ScreenshotMediaType | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.support_report_request_context_type_0 import SupportReportRequestContextType0  # noqa: PLC0415

        category = self.category.value

        message = self.message

        client: None | str | Unset
        if isinstance(self.client, Unset):
            client = UNSET
        else:
            client = self.client

        context: dict[str, Any] | None | Unset
        if isinstance(self.context, Unset):
            context = UNSET
        elif isinstance(self.context, SupportReportRequestContextType0):
            context = self.context.to_dict()
        else:
            context = self.context

        screenshot: None | str | Unset
        if isinstance(self.screenshot, Unset):
            screenshot = UNSET
        else:
            screenshot = self.screenshot

        screenshot_media_type: None | str | Unset
        if isinstance(self.screenshot_media_type, Unset):
            screenshot_media_type = UNSET
        elif isinstance(self.screenshot_media_type, ScreenshotMediaType):
            screenshot_media_type = self.screenshot_media_type.value
        else:
            screenshot_media_type = self.screenshot_media_type

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "category": category,
                "message": message,
            }
        )
        if client is not UNSET:
            field_dict["client"] = client
        if context is not UNSET:
            field_dict["context"] = context
        if screenshot is not UNSET:
            field_dict["screenshot"] = screenshot
        if screenshot_media_type is not UNSET:
            field_dict["screenshot_media_type"] = screenshot_media_type

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.support_report_request_context_type_0 import SupportReportRequestContextType0  # noqa: PLC0415

        d = dict(src_dict)
        category = Category(d.pop("category"))

        message = d.pop("message")

        def _parse_client(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        client = _parse_client(d.pop("client", UNSET))

        def _parse_context(data: object) -> None | SupportReportRequestContextType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                context_type_0 = SupportReportRequestContextType0.from_dict(data)

                return context_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SupportReportRequestContextType0 | Unset, data)

        context = _parse_context(d.pop("context", UNSET))

        def _parse_screenshot(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        screenshot = _parse_screenshot(d.pop("screenshot", UNSET))

        def _parse_screenshot_media_type(data: object) -> None | ScreenshotMediaType | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                screenshot_media_type_type_0 = ScreenshotMediaType(data)

                return screenshot_media_type_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ScreenshotMediaType | Unset, data)

        screenshot_media_type = _parse_screenshot_media_type(d.pop("screenshot_media_type", UNSET))

        support_report_request = cls(
            category=category,
            message=message,
            client=client,
            context=context,
            screenshot=screenshot,
            screenshot_media_type=screenshot_media_type,
        )

        support_report_request.additional_properties = d
        return support_report_request

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
