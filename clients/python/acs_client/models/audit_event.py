from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.audit_actor import AuditActor
    from ..models.audit_target import AuditTarget


T = TypeVar("T", bound="AuditEvent")


@_attrs_define
class AuditEvent:
    """One audit record.

    Attributes:
        action (str): Such as `api_key.created` or `account.password_changed`.
        actor (AuditActor):
        at (datetime.datetime):
        id (int):
        ip (None | str | Unset): The client address of the request.
        target (AuditTarget | None | Unset):
    """

    action: str
    actor: AuditActor
    at: datetime.datetime
    id: int
    ip: None | str | Unset = UNSET
    target: AuditTarget | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.audit_target import AuditTarget  # noqa: PLC0415

        action = self.action

        actor = self.actor.to_dict()

        at = self.at.isoformat()

        id = self.id

        ip: None | str | Unset
        if isinstance(self.ip, Unset):
            ip = UNSET
        else:
            ip = self.ip

        target: dict[str, Any] | None | Unset
        if isinstance(self.target, Unset):
            target = UNSET
        elif isinstance(self.target, AuditTarget):
            target = self.target.to_dict()
        else:
            target = self.target

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "action": action,
                "actor": actor,
                "at": at,
                "id": id,
            }
        )
        if ip is not UNSET:
            field_dict["ip"] = ip
        if target is not UNSET:
            field_dict["target"] = target

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.audit_actor import AuditActor  # noqa: PLC0415
        from ..models.audit_target import AuditTarget  # noqa: PLC0415

        d = dict(src_dict)
        action = d.pop("action")

        actor = AuditActor.from_dict(d.pop("actor"))

        at = datetime.datetime.fromisoformat(d.pop("at"))

        id = d.pop("id")

        def _parse_ip(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        ip = _parse_ip(d.pop("ip", UNSET))

        def _parse_target(data: object) -> AuditTarget | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                target_type_0 = AuditTarget.from_dict(data)

                return target_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AuditTarget | None | Unset, data)

        target = _parse_target(d.pop("target", UNSET))

        audit_event = cls(
            action=action,
            actor=actor,
            at=at,
            id=id,
            ip=ip,
            target=target,
        )

        audit_event.additional_properties = d
        return audit_event

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
