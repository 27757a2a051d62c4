from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="TeamSchedule")


@_attrs_define
class TeamSchedule:
    """A teammate's cron schedule.

    Attributes:
        agent_id (UUID):
        cron (str): Five fields in UTC, or `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`,
            `@hourly`.
        enabled (bool):
        id (UUID):
        inserted_at (datetime.datetime):
        one_off (bool): True: each run opens a fresh conversation; false: runs go into the teammate's own conversation.
        prompt (str):
        updated_at (datetime.datetime):
        last_conversation_id (None | Unset | UUID): The conversation of the last run; null when it failed or never ran.
        last_error (None | str | Unset): Why the last run failed (such as `teammate was busy`); null after a good run.
        last_run_at (datetime.datetime | None | Unset):
        name (None | str | Unset): At most 120 characters.
        next_run_at (datetime.datetime | None | Unset): Null while disabled.
    """

    agent_id: UUID
    cron: str
    enabled: bool
    id: UUID
    inserted_at: datetime.datetime
    one_off: bool
    prompt: str
    updated_at: datetime.datetime
    last_conversation_id: None | Unset | UUID = UNSET
    last_error: None | str | Unset = UNSET
    last_run_at: datetime.datetime | None | Unset = UNSET
    name: None | str | Unset = UNSET
    next_run_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        agent_id = str(self.agent_id)

        cron = self.cron

        enabled = self.enabled

        id = str(self.id)

        inserted_at = self.inserted_at.isoformat()

        one_off = self.one_off

        prompt = self.prompt

        updated_at = self.updated_at.isoformat()

        last_conversation_id: None | str | Unset
        if isinstance(self.last_conversation_id, Unset):
            last_conversation_id = UNSET
        elif isinstance(self.last_conversation_id, UUID):
            last_conversation_id = str(self.last_conversation_id)
        else:
            last_conversation_id = self.last_conversation_id

        last_error: None | str | Unset
        if isinstance(self.last_error, Unset):
            last_error = UNSET
        else:
            last_error = self.last_error

        last_run_at: None | str | Unset
        if isinstance(self.last_run_at, Unset):
            last_run_at = UNSET
        elif isinstance(self.last_run_at, datetime.datetime):
            last_run_at = self.last_run_at.isoformat()
        else:
            last_run_at = self.last_run_at

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        next_run_at: None | str | Unset
        if isinstance(self.next_run_at, Unset):
            next_run_at = UNSET
        elif isinstance(self.next_run_at, datetime.datetime):
            next_run_at = self.next_run_at.isoformat()
        else:
            next_run_at = self.next_run_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "agent_id": agent_id,
                "cron": cron,
                "enabled": enabled,
                "id": id,
                "inserted_at": inserted_at,
                "one_off": one_off,
                "prompt": prompt,
                "updated_at": updated_at,
            }
        )
        if last_conversation_id is not UNSET:
            field_dict["last_conversation_id"] = last_conversation_id
        if last_error is not UNSET:
            field_dict["last_error"] = last_error
        if last_run_at is not UNSET:
            field_dict["last_run_at"] = last_run_at
        if name is not UNSET:
            field_dict["name"] = name
        if next_run_at is not UNSET:
            field_dict["next_run_at"] = next_run_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        agent_id = UUID(d.pop("agent_id"))

        cron = d.pop("cron")

        enabled = d.pop("enabled")

        id = UUID(d.pop("id"))

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        one_off = d.pop("one_off")

        prompt = d.pop("prompt")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_last_conversation_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                last_conversation_id_type_0 = UUID(data)

                return last_conversation_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        last_conversation_id = _parse_last_conversation_id(d.pop("last_conversation_id", UNSET))

        def _parse_last_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        last_error = _parse_last_error(d.pop("last_error", UNSET))

        def _parse_last_run_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                last_run_at_type_0 = datetime.datetime.fromisoformat(data)

                return last_run_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        last_run_at = _parse_last_run_at(d.pop("last_run_at", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        def _parse_next_run_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_run_at_type_0 = datetime.datetime.fromisoformat(data)

                return next_run_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        next_run_at = _parse_next_run_at(d.pop("next_run_at", UNSET))

        team_schedule = cls(
            agent_id=agent_id,
            cron=cron,
            enabled=enabled,
            id=id,
            inserted_at=inserted_at,
            one_off=one_off,
            prompt=prompt,
            updated_at=updated_at,
            last_conversation_id=last_conversation_id,
            last_error=last_error,
            last_run_at=last_run_at,
            name=name,
            next_run_at=next_run_at,
        )

        team_schedule.additional_properties = d
        return team_schedule

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
