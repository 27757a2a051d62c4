from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.delivery_status import DeliveryStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.webhook_attempt import WebhookAttempt


T = TypeVar("T", bound="WebhookDelivery")


@_attrs_define
class WebhookDelivery:
    """One event for one endpoint, with every attempt made.

    Attributes:
        attempt_count (int):
        attempts (list[WebhookAttempt]):
        endpoint_id (UUID):
        event_id (str): The log event id (the payload's `id`).
        event_type (str):
        id (UUID):
        inserted_at (datetime.datetime):
        payload (Any): The body sent on every attempt.
        status (DeliveryStatus):
        updated_at (datetime.datetime):
        next_attempt_at (datetime.datetime | None | Unset):
    """

    attempt_count: int
    attempts: list[WebhookAttempt]
    endpoint_id: UUID
    event_id: str
    event_type: str
    id: UUID
    inserted_at: datetime.datetime
    payload: Any
    status: DeliveryStatus
    updated_at: datetime.datetime
    next_attempt_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempt_count = self.attempt_count

        attempts = []
        for attempts_item_data in self.attempts:
            attempts_item = attempts_item_data.to_dict()
            attempts.append(attempts_item)

        endpoint_id = str(self.endpoint_id)

        event_id = self.event_id

        event_type = self.event_type

        id = str(self.id)

        inserted_at = self.inserted_at.isoformat()

        payload = self.payload

        status = self.status.value

        updated_at = self.updated_at.isoformat()

        next_attempt_at: None | str | Unset
        if isinstance(self.next_attempt_at, Unset):
            next_attempt_at = UNSET
        elif isinstance(self.next_attempt_at, datetime.datetime):
            next_attempt_at = self.next_attempt_at.isoformat()
        else:
            next_attempt_at = self.next_attempt_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt_count": attempt_count,
                "attempts": attempts,
                "endpoint_id": endpoint_id,
                "event_id": event_id,
                "event_type": event_type,
                "id": id,
                "inserted_at": inserted_at,
                "payload": payload,
                "status": status,
                "updated_at": updated_at,
            }
        )
        if next_attempt_at is not UNSET:
            field_dict["next_attempt_at"] = next_attempt_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.webhook_attempt import WebhookAttempt  # noqa: PLC0415

        d = dict(src_dict)
        attempt_count = d.pop("attempt_count")

        attempts = []
        _attempts = d.pop("attempts")
        for attempts_item_data in _attempts:
            attempts_item = WebhookAttempt.from_dict(attempts_item_data)

            attempts.append(attempts_item)

        endpoint_id = UUID(d.pop("endpoint_id"))

        event_id = d.pop("event_id")

        event_type = d.pop("event_type")

        id = UUID(d.pop("id"))

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        payload = d.pop("payload")

        status = DeliveryStatus(d.pop("status"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_next_attempt_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_attempt_at_type_0 = datetime.datetime.fromisoformat(data)

                return next_attempt_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        next_attempt_at = _parse_next_attempt_at(d.pop("next_attempt_at", UNSET))

        webhook_delivery = cls(
            attempt_count=attempt_count,
            attempts=attempts,
            endpoint_id=endpoint_id,
            event_id=event_id,
            event_type=event_type,
            id=id,
            inserted_at=inserted_at,
            payload=payload,
            status=status,
            updated_at=updated_at,
            next_attempt_at=next_attempt_at,
        )

        webhook_delivery.additional_properties = d
        return webhook_delivery

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
