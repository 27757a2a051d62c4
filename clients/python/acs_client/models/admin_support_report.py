from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.category import Category
from ..models.report_status import ReportStatus
from ..models.screenshot_media_type import ScreenshotMediaType
from ..types import UNSET, Unset

T = TypeVar("T", bound="AdminSupportReport")


@_attrs_define
class AdminSupportReport:
    """A report with what an operator needs to act on it.

    Attributes:
        category (Category):
        has_screenshot (bool):
        id (UUID):
        inserted_at (datetime.datetime):
        message (str):
        status (ReportStatus):
        account_email (str):
        account_id (UUID):
        attempts (int): Forwarding attempts made so far.
        client (None | str | Unset):
        context (Any | Unset):
        external_url (None | str | Unset):
        forward_error (None | str | Unset):
        forwarded_at (datetime.datetime | None | Unset):
        screenshot_media_type (None | ScreenshotMediaType | Unset):
    """

    category: Category
    has_screenshot: bool
    id: UUID
    inserted_at: datetime.datetime
    message: str
    status: ReportStatus
    account_email: str
    account_id: UUID
    attempts: int
    client: None | str | Unset = UNSET
    context: Any | Unset = UNSET
    external_url: None | str | Unset = UNSET
    forward_error: None | str | Unset = UNSET
    forwarded_at: datetime.datetime | None | Unset = UNSET
    screenshot_media_type: None | ScreenshotMediaType | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        category = self.category.value

        has_screenshot = self.has_screenshot

        id = str(self.id)

        inserted_at = self.inserted_at.isoformat()

        message = self.message

        status = self.status.value

        account_email = self.account_email

        account_id = str(self.account_id)

        attempts = self.attempts

        client: None | str | Unset
        if isinstance(self.client, Unset):
            client = UNSET
        else:
            client = self.client

        context = self.context

        external_url: None | str | Unset
        if isinstance(self.external_url, Unset):
            external_url = UNSET
        else:
            external_url = self.external_url

        forward_error: None | str | Unset
        if isinstance(self.forward_error, Unset):
            forward_error = UNSET
        else:
            forward_error = self.forward_error

        forwarded_at: None | str | Unset
        if isinstance(self.forwarded_at, Unset):
            forwarded_at = UNSET
        elif isinstance(self.forwarded_at, datetime.datetime):
            forwarded_at = self.forwarded_at.isoformat()
        else:
            forwarded_at = self.forwarded_at

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
                "has_screenshot": has_screenshot,
                "id": id,
                "inserted_at": inserted_at,
                "message": message,
                "status": status,
                "account_email": account_email,
                "account_id": account_id,
                "attempts": attempts,
            }
        )
        if client is not UNSET:
            field_dict["client"] = client
        if context is not UNSET:
            field_dict["context"] = context
        if external_url is not UNSET:
            field_dict["external_url"] = external_url
        if forward_error is not UNSET:
            field_dict["forward_error"] = forward_error
        if forwarded_at is not UNSET:
            field_dict["forwarded_at"] = forwarded_at
        if screenshot_media_type is not UNSET:
            field_dict["screenshot_media_type"] = screenshot_media_type

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        category = Category(d.pop("category"))

        has_screenshot = d.pop("has_screenshot")

        id = UUID(d.pop("id"))

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        message = d.pop("message")

        status = ReportStatus(d.pop("status"))

        account_email = d.pop("account_email")

        account_id = UUID(d.pop("account_id"))

        attempts = d.pop("attempts")

        def _parse_client(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        client = _parse_client(d.pop("client", UNSET))

        context = d.pop("context", UNSET)

        def _parse_external_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        external_url = _parse_external_url(d.pop("external_url", UNSET))

        def _parse_forward_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        forward_error = _parse_forward_error(d.pop("forward_error", UNSET))

        def _parse_forwarded_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                forwarded_at_type_0 = datetime.datetime.fromisoformat(data)

                return forwarded_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        forwarded_at = _parse_forwarded_at(d.pop("forwarded_at", UNSET))

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

        admin_support_report = cls(
            category=category,
            has_screenshot=has_screenshot,
            id=id,
            inserted_at=inserted_at,
            message=message,
            status=status,
            account_email=account_email,
            account_id=account_id,
            attempts=attempts,
            client=client,
            context=context,
            external_url=external_url,
            forward_error=forward_error,
            forwarded_at=forwarded_at,
            screenshot_media_type=screenshot_media_type,
        )

        admin_support_report.additional_properties = d
        return admin_support_report

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
