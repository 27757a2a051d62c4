from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.subscription_status import SubscriptionStatus
from ..types import UNSET, Unset

T = TypeVar("T", bound="Subscription")


@_attrs_define
class Subscription:
    """A linked vendor subscription.

    Attributes:
        id (UUID):
        inserted_at (datetime.datetime):
        name (str):
        status (SubscriptionStatus): `active`; `revoked` when the vendor refused a refresh; `expired` when the token ran
            out and cannot be refreshed; `disconnected` when the owner disconnected it (tokens forgotten).
        updated_at (datetime.datetime):
        account_email (None | str | Unset):
        exhausted_until (datetime.datetime | None | Unset): Set while the vendor says the subscription is spent: when it
            resets.
        last_used_at (datetime.datetime | None | Unset):
        plan (None | str | Unset):
    """

    id: UUID
    inserted_at: datetime.datetime
    name: str
    status: SubscriptionStatus
    updated_at: datetime.datetime
    account_email: None | str | Unset = UNSET
    exhausted_until: datetime.datetime | None | Unset = UNSET
    last_used_at: datetime.datetime | None | Unset = UNSET
    plan: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = str(self.id)

        inserted_at = self.inserted_at.isoformat()

        name = self.name

        status = self.status.value

        updated_at = self.updated_at.isoformat()

        account_email: None | str | Unset
        if isinstance(self.account_email, Unset):
            account_email = UNSET
        else:
            account_email = self.account_email

        exhausted_until: None | str | Unset
        if isinstance(self.exhausted_until, Unset):
            exhausted_until = UNSET
        elif isinstance(self.exhausted_until, datetime.datetime):
            exhausted_until = self.exhausted_until.isoformat()
        else:
            exhausted_until = self.exhausted_until

        last_used_at: None | str | Unset
        if isinstance(self.last_used_at, Unset):
            last_used_at = UNSET
        elif isinstance(self.last_used_at, datetime.datetime):
            last_used_at = self.last_used_at.isoformat()
        else:
            last_used_at = self.last_used_at

        plan: None | str | Unset
        if isinstance(self.plan, Unset):
            plan = UNSET
        else:
            plan = self.plan

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "inserted_at": inserted_at,
                "name": name,
                "status": status,
                "updated_at": updated_at,
            }
        )
        if account_email is not UNSET:
            field_dict["account_email"] = account_email
        if exhausted_until is not UNSET:
            field_dict["exhausted_until"] = exhausted_until
        if last_used_at is not UNSET:
            field_dict["last_used_at"] = last_used_at
        if plan is not UNSET:
            field_dict["plan"] = plan

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = UUID(d.pop("id"))

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        name = d.pop("name")

        status = SubscriptionStatus(d.pop("status"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_account_email(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        account_email = _parse_account_email(d.pop("account_email", UNSET))

        def _parse_exhausted_until(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                exhausted_until_type_0 = datetime.datetime.fromisoformat(data)

                return exhausted_until_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        exhausted_until = _parse_exhausted_until(d.pop("exhausted_until", UNSET))

        def _parse_last_used_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                last_used_at_type_0 = datetime.datetime.fromisoformat(data)

                return last_used_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        last_used_at = _parse_last_used_at(d.pop("last_used_at", UNSET))

        def _parse_plan(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        plan = _parse_plan(d.pop("plan", UNSET))

        subscription = cls(
            id=id,
            inserted_at=inserted_at,
            name=name,
            status=status,
            updated_at=updated_at,
            account_email=account_email,
            exhausted_until=exhausted_until,
            last_used_at=last_used_at,
            plan=plan,
        )

        subscription.additional_properties = d
        return subscription

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
