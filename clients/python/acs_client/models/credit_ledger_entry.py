from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.ledger_reason import LedgerReason
from ..types import UNSET, Unset

T = TypeVar("T", bound="CreditLedgerEntry")


@_attrs_define
class CreditLedgerEntry:
    """One ledger row.

    Attributes:
        amount (int): Signed: grants positive, spending negative.
        balance_after (int):
        id (int): Cursor for `before`.
        inserted_at (datetime.datetime):
        reason (LedgerReason): Why the balance moved.
        conversation_id (None | Unset | UUID):
        sandbox_id (None | Unset | UUID):
        turn_id (None | Unset | UUID):
    """

    amount: int
    balance_after: int
    id: int
    inserted_at: datetime.datetime
    reason: LedgerReason
    conversation_id: None | Unset | UUID = UNSET
    sandbox_id: None | Unset | UUID = UNSET
    turn_id: None | Unset | UUID = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        amount = self.amount

        balance_after = self.balance_after

        id = self.id

        inserted_at = self.inserted_at.isoformat()

        reason = self.reason.value

        conversation_id: None | str | Unset
        if isinstance(self.conversation_id, Unset):
            conversation_id = UNSET
        elif isinstance(self.conversation_id, UUID):
            conversation_id = str(self.conversation_id)
        else:
            conversation_id = self.conversation_id

        sandbox_id: None | str | Unset
        if isinstance(self.sandbox_id, Unset):
            sandbox_id = UNSET
        elif isinstance(self.sandbox_id, UUID):
            sandbox_id = str(self.sandbox_id)
        else:
            sandbox_id = self.sandbox_id

        turn_id: None | str | Unset
        if isinstance(self.turn_id, Unset):
            turn_id = UNSET
        elif isinstance(self.turn_id, UUID):
            turn_id = str(self.turn_id)
        else:
            turn_id = self.turn_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "amount": amount,
                "balance_after": balance_after,
                "id": id,
                "inserted_at": inserted_at,
                "reason": reason,
            }
        )
        if conversation_id is not UNSET:
            field_dict["conversation_id"] = conversation_id
        if sandbox_id is not UNSET:
            field_dict["sandbox_id"] = sandbox_id
        if turn_id is not UNSET:
            field_dict["turn_id"] = turn_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        amount = d.pop("amount")

        balance_after = d.pop("balance_after")

        id = d.pop("id")

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        reason = LedgerReason(d.pop("reason"))

        def _parse_conversation_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                conversation_id_type_0 = UUID(data)

                return conversation_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        conversation_id = _parse_conversation_id(d.pop("conversation_id", UNSET))

        def _parse_sandbox_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                sandbox_id_type_0 = UUID(data)

                return sandbox_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        sandbox_id = _parse_sandbox_id(d.pop("sandbox_id", UNSET))

        def _parse_turn_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                turn_id_type_0 = UUID(data)

                return turn_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        turn_id = _parse_turn_id(d.pop("turn_id", UNSET))

        credit_ledger_entry = cls(
            amount=amount,
            balance_after=balance_after,
            id=id,
            inserted_at=inserted_at,
            reason=reason,
            conversation_id=conversation_id,
            sandbox_id=sandbox_id,
            turn_id=turn_id,
        )

        credit_ledger_entry.additional_properties = d
        return credit_ledger_entry

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
