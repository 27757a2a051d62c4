from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="AdminReplica")


@_attrs_define
class AdminReplica:
    """
    Attributes:
        alive (bool): Heard from within 15 s; a silent one's machines and turns are taken over.
        id (UUID):
        machines (int): Machines not terminated that it serves.
        seen_at (datetime.datetime): Its last heartbeat (every 3 s while it runs).
        started_at (datetime.datetime):
    """

    alive: bool
    id: UUID
    machines: int
    seen_at: datetime.datetime
    started_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        alive = self.alive

        id = str(self.id)

        machines = self.machines

        seen_at = self.seen_at.isoformat()

        started_at = self.started_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "alive": alive,
                "id": id,
                "machines": machines,
                "seen_at": seen_at,
                "started_at": started_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        alive = d.pop("alive")

        id = UUID(d.pop("id"))

        machines = d.pop("machines")

        seen_at = datetime.datetime.fromisoformat(d.pop("seen_at"))

        started_at = datetime.datetime.fromisoformat(d.pop("started_at"))

        admin_replica = cls(
            alive=alive,
            id=id,
            machines=machines,
            seen_at=seen_at,
            started_at=started_at,
        )

        admin_replica.additional_properties = d
        return admin_replica

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
