from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

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
    """

    comped: bool
    credit_balance: int
    email: str
    email_verified: bool
    id: UUID
    inserted_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        comped = self.comped

        credit_balance = self.credit_balance

        email = self.email

        email_verified = self.email_verified

        id = str(self.id)

        inserted_at = self.inserted_at.isoformat()

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

        admin_account = cls(
            comped=comped,
            credit_balance=credit_balance,
            email=email,
            email_verified=email_verified,
            id=id,
            inserted_at=inserted_at,
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
