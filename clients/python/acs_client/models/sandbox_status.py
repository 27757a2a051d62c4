from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.machine_state_view import MachineStateView
from ..models.sandbox_state import SandboxState
from ..types import UNSET, Unset

T = TypeVar("T", bound="SandboxStatus")


@_attrs_define
class SandboxStatus:
    """
    Attributes:
        id (UUID):
        machine (MachineStateView): Whether the machine's processes run, beside its recorded status.
        mid_turn (bool): True while a turn runs on the machine.
        status (SandboxState):
        error (None | str | Unset): The last failure (provisioning, reattach), if the sandbox failed.
        last_resumed_at (datetime.datetime | None | Unset):
    """

    id: UUID
    machine: MachineStateView
    mid_turn: bool
    status: SandboxState
    error: None | str | Unset = UNSET
    last_resumed_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = str(self.id)

        machine = self.machine.value

        mid_turn = self.mid_turn

        status = self.status.value

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        last_resumed_at: None | str | Unset
        if isinstance(self.last_resumed_at, Unset):
            last_resumed_at = UNSET
        elif isinstance(self.last_resumed_at, datetime.datetime):
            last_resumed_at = self.last_resumed_at.isoformat()
        else:
            last_resumed_at = self.last_resumed_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "machine": machine,
                "mid_turn": mid_turn,
                "status": status,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if last_resumed_at is not UNSET:
            field_dict["last_resumed_at"] = last_resumed_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = UUID(d.pop("id"))

        machine = MachineStateView(d.pop("machine"))

        mid_turn = d.pop("mid_turn")

        status = SandboxState(d.pop("status"))

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_last_resumed_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                last_resumed_at_type_0 = datetime.datetime.fromisoformat(data)

                return last_resumed_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        last_resumed_at = _parse_last_resumed_at(d.pop("last_resumed_at", UNSET))

        sandbox_status = cls(
            id=id,
            machine=machine,
            mid_turn=mid_turn,
            status=status,
            error=error,
            last_resumed_at=last_resumed_at,
        )

        sandbox_status.additional_properties = d
        return sandbox_status

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
