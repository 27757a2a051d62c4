from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="AdminAccount")


@_attrs_define
class AdminAccount:
    """
    Attributes:
        comped (bool): Spends nothing and is never refused for credits.
        credit_balance (int):
        email (str):
        email_verified (bool):
        id (UUID):
        inserted_at (datetime.datetime):
        suspended_at (datetime.datetime | None | Unset): Set while the account is suspended: its keys and sessions are
            refused, nothing new starts.
    """

    comped: bool
    credit_balance: int
    email: str
    email_verified: bool
    id: UUID
    inserted_at: datetime.datetime
    suspended_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        comped = self.comped

        credit_balance = self.credit_balance

        email = self.email

        email_verified = self.email_verified

        id = str(self.id)

        inserted_at = self.inserted_at.isoformat()

        suspended_at: None | str | Unset
        if isinstance(self.suspended_at, Unset):
            suspended_at = UNSET
        elif isinstance(self.suspended_at, datetime.datetime):
            suspended_at = self.suspended_at.isoformat()
        else:
            suspended_at = self.suspended_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "comped": comped,
                "credit_balance": credit_balance,
                "email": email,
                "email_verified": email_verified,
                "id": id,
                "inserted_at": inserted_at,
            }
        )
        if suspended_at is not UNSET:
            field_dict["suspended_at"] = suspended_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        comped = d.pop("comped")

        credit_balance = d.pop("credit_balance")

        email = d.pop("email")

        email_verified = d.pop("email_verified")

        id = UUID(d.pop("id"))

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        def _parse_suspended_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                suspended_at_type_0 = datetime.datetime.fromisoformat(data)

                return suspended_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        suspended_at = _parse_suspended_at(d.pop("suspended_at", UNSET))

        admin_account = cls(
            comped=comped,
            credit_balance=credit_balance,
            email=email,
            email_verified=email_verified,
            id=id,
            inserted_at=inserted_at,
            suspended_at=suspended_at,
        )

        admin_account.additional_properties = d
        return admin_account

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
