from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.credit_ledger_entry import CreditLedgerEntry
    from ..models.credit_rates import CreditRates


T = TypeVar("T", bound="Credits")


@_attrs_define
class Credits:
    """The account's credits.

    Attributes:
        balance (int):
        comped (bool): A comped account spends nothing and is never refused for credits.
        enabled (bool): False on an instance that does not keep credits (nothing is spent or refused).
        ledger (list[CreditLedgerEntry]): Ledger rows, newest first (one page; see `meta`).
        rates (CreditRates): What each kind of spending costs.
        upgrade_url (None | str | Unset): Where to buy more; null when the operator set none.
    """

    balance: int
    comped: bool
    enabled: bool
    ledger: list[CreditLedgerEntry]
    rates: CreditRates
    upgrade_url: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        balance = self.balance

        comped = self.comped

        enabled = self.enabled

        ledger = []
        for ledger_item_data in self.ledger:
            ledger_item = ledger_item_data.to_dict()
            ledger.append(ledger_item)

        rates = self.rates.to_dict()

        upgrade_url: None | str | Unset
        if isinstance(self.upgrade_url, Unset):
            upgrade_url = UNSET
        else:
            upgrade_url = self.upgrade_url

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "balance": balance,
                "comped": comped,
                "enabled": enabled,
                "ledger": ledger,
                "rates": rates,
            }
        )
        if upgrade_url is not UNSET:
            field_dict["upgrade_url"] = upgrade_url

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.credit_ledger_entry import CreditLedgerEntry  # noqa: PLC0415
        from ..models.credit_rates import CreditRates  # noqa: PLC0415

        d = dict(src_dict)
        balance = d.pop("balance")

        comped = d.pop("comped")

        enabled = d.pop("enabled")

        ledger = []
        _ledger = d.pop("ledger")
        for ledger_item_data in _ledger:
            ledger_item = CreditLedgerEntry.from_dict(ledger_item_data)

            ledger.append(ledger_item)

        rates = CreditRates.from_dict(d.pop("rates"))

        def _parse_upgrade_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        upgrade_url = _parse_upgrade_url(d.pop("upgrade_url", UNSET))

        credits_ = cls(
            balance=balance,
            comped=comped,
            enabled=enabled,
            ledger=ledger,
            rates=rates,
            upgrade_url=upgrade_url,
        )

        credits_.additional_properties = d
        return credits_

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
