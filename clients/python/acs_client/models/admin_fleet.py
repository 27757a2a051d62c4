from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.admin_machine_count import AdminMachineCount
    from ..models.admin_queue import AdminQueue
    from ..models.admin_replica import AdminReplica


T = TypeVar("T", bound="AdminFleet")


@_attrs_define
class AdminFleet:
    """
    Attributes:
        machines (list[AdminMachineCount]): Machines not terminated, counted by provider and state.
        queue (AdminQueue):
        replicas (list[AdminReplica]): Servers on this database, newest heartbeat first.
    """

    machines: list[AdminMachineCount]
    queue: AdminQueue
    replicas: list[AdminReplica]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        machines = []
        for machines_item_data in self.machines:
            machines_item = machines_item_data.to_dict()
            machines.append(machines_item)

        queue = self.queue.to_dict()

        replicas = []
        for replicas_item_data in self.replicas:
            replicas_item = replicas_item_data.to_dict()
            replicas.append(replicas_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "machines": machines,
                "queue": queue,
                "replicas": replicas,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.admin_machine_count import AdminMachineCount  # noqa: PLC0415
        from ..models.admin_queue import AdminQueue  # noqa: PLC0415
        from ..models.admin_replica import AdminReplica  # noqa: PLC0415

        d = dict(src_dict)
        machines = []
        _machines = d.pop("machines")
        for machines_item_data in _machines:
            machines_item = AdminMachineCount.from_dict(machines_item_data)

            machines.append(machines_item)

        queue = AdminQueue.from_dict(d.pop("queue"))

        replicas = []
        _replicas = d.pop("replicas")
        for replicas_item_data in _replicas:
            replicas_item = AdminReplica.from_dict(replicas_item_data)

            replicas.append(replicas_item)

        admin_fleet = cls(
            machines=machines,
            queue=queue,
            replicas=replicas,
        )

        admin_fleet.additional_properties = d
        return admin_fleet

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
