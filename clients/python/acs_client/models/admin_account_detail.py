from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.admin_ledger_row import AdminLedgerRow
    from ..models.admin_machine_count import AdminMachineCount
    from ..models.admin_usage import AdminUsage


T = TypeVar("T", bound="AdminAccountDetail")


@_attrs_define
class AdminAccountDetail:
    """One account: its fields, its keys, its latest ledger rows, its machines and usage.

    Attributes:
        comped (bool): Spends nothing and is never refused for credits.
        credit_balance (int):
        email (str):
        email_verified (bool):
        id (UUID):
        inserted_at (datetime.datetime):
        api_keys (int): Its API keys that have not expired (a revoked key is gone; machines' callback keys are not
            counted).
        ledger (list[AdminLedgerRow]): The 20 latest ledger rows, newest first.
        machines (list[AdminMachineCount]): Its machines not terminated, by provider and state.
        usage (AdminUsage): What the account used.
        suspended_at (datetime.datetime | None | Unset): Set while the account is suspended: its keys and sessions are
            refused, nothing new starts.
    """

    comped: bool
    credit_balance: int
    email: str
    email_verified: bool
    id: UUID
    inserted_at: datetime.datetime
    api_keys: int
    ledger: list[AdminLedgerRow]
    machines: list[AdminMachineCount]
    usage: AdminUsage
    suspended_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        comped = self.comped

        credit_balance = self.credit_balance

        email = self.email

        email_verified = self.email_verified

        id = str(self.id)

        inserted_at = self.inserted_at.isoformat()

        api_keys = self.api_keys

        ledger = []
        for ledger_item_data in self.ledger:
            ledger_item = ledger_item_data.to_dict()
            ledger.append(ledger_item)

        machines = []
        for machines_item_data in self.machines:
            machines_item = machines_item_data.to_dict()
            machines.append(machines_item)

        usage = self.usage.to_dict()

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
                "api_keys": api_keys,
                "ledger": ledger,
                "machines": machines,
                "usage": usage,
            }
        )
        if suspended_at is not UNSET:
            field_dict["suspended_at"] = suspended_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.admin_ledger_row import AdminLedgerRow  # noqa: PLC0415
        from ..models.admin_machine_count import AdminMachineCount  # noqa: PLC0415
        from ..models.admin_usage import AdminUsage  # noqa: PLC0415

        d = dict(src_dict)
        comped = d.pop("comped")

        credit_balance = d.pop("credit_balance")

        email = d.pop("email")

        email_verified = d.pop("email_verified")

        id = UUID(d.pop("id"))

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        api_keys = d.pop("api_keys")

        ledger = []
        _ledger = d.pop("ledger")
        for ledger_item_data in _ledger:
            ledger_item = AdminLedgerRow.from_dict(ledger_item_data)

            ledger.append(ledger_item)

        machines = []
        _machines = d.pop("machines")
        for machines_item_data in _machines:
            machines_item = AdminMachineCount.from_dict(machines_item_data)

            machines.append(machines_item)

        usage = AdminUsage.from_dict(d.pop("usage"))

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

        admin_account_detail = cls(
            comped=comped,
            credit_balance=credit_balance,
            email=email,
            email_verified=email_verified,
            id=id,
            inserted_at=inserted_at,
            api_keys=api_keys,
            ledger=ledger,
            machines=machines,
            usage=usage,
            suspended_at=suspended_at,
        )

        admin_account_detail.additional_properties = d
        return admin_account_detail

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
