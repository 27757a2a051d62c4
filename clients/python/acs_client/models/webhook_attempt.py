from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.attempt_error import AttemptError
from ..models.attempt_trigger import AttemptTrigger
from ..types import UNSET, Unset

T = TypeVar("T", bound="WebhookAttempt")


@_attrs_define
class WebhookAttempt:
    """One HTTP attempt of a delivery.

    Attributes:
        at (datetime.datetime):
        attempt (int): 1-based, as sent in `Service-Delivery-Attempt`.
        latency_ms (int):
        trigger (AttemptTrigger): What sent the attempt.
        error (AttemptError | None | Unset):
        error_message (None | str | Unset):
        response_body (None | str | Unset): The first 4096 bytes of the answer.
        response_status (int | None | Unset):
    """

    at: datetime.datetime
    attempt: int
    latency_ms: int
    trigger: AttemptTrigger
    error: AttemptError | None | Unset = UNSET
    error_message: None | str | Unset = UNSET
    response_body: None | str | Unset = UNSET
    response_status: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        at = self.at.isoformat()

        attempt = self.attempt

        latency_ms = self.latency_ms

        trigger = self.trigger.value

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        elif isinstance(self.error, AttemptError):
            error = self.error.value
        else:
            error = self.error

        error_message: None | str | Unset
        if isinstance(self.error_message, Unset):
            error_message = UNSET
        else:
            error_message = self.error_message

        response_body: None | str | Unset
        if isinstance(self.response_body, Unset):
            response_body = UNSET
        else:
            response_body = self.response_body

        response_status: int | None | Unset
        if isinstance(self.response_status, Unset):
            response_status = UNSET
        else:
            response_status = self.response_status

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "at": at,
                "attempt": attempt,
                "latency_ms": latency_ms,
                "trigger": trigger,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if error_message is not UNSET:
            field_dict["error_message"] = error_message
        if response_body is not UNSET:
            field_dict["response_body"] = response_body
        if response_status is not UNSET:
            field_dict["response_status"] = response_status

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        at = datetime.datetime.fromisoformat(d.pop("at"))

        attempt = d.pop("attempt")

        latency_ms = d.pop("latency_ms")

        trigger = AttemptTrigger(d.pop("trigger"))

        def _parse_error(data: object) -> AttemptError | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                error_type_0 = AttemptError(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AttemptError | None | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_error_message(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error_message = _parse_error_message(d.pop("error_message", UNSET))

        def _parse_response_body(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        response_body = _parse_response_body(d.pop("response_body", UNSET))

        def _parse_response_status(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        response_status = _parse_response_status(d.pop("response_status", UNSET))

        webhook_attempt = cls(
            at=at,
            attempt=attempt,
            latency_ms=latency_ms,
            trigger=trigger,
            error=error,
            error_message=error_message,
            response_body=response_body,
            response_status=response_status,
        )

        webhook_attempt.additional_properties = d
        return webhook_attempt

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
