from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.agent import Agent


T = TypeVar("T", bound="AgentVersion")


@_attrs_define
class AgentVersion:
    """One version of an agent, whole.

    Attributes:
        agent (Agent): An agent: its current version's fields plus identity.
        inserted_at (datetime.datetime):
        version (int):
    """

    agent: Agent
    inserted_at: datetime.datetime
    version: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        agent = self.agent.to_dict()

        inserted_at = self.inserted_at.isoformat()

        version = self.version

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "agent": agent,
                "inserted_at": inserted_at,
                "version": version,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.agent import Agent  # noqa: PLC0415

        d = dict(src_dict)
        agent = Agent.from_dict(d.pop("agent"))

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        version = d.pop("version")

        agent_version = cls(
            agent=agent,
            inserted_at=inserted_at,
            version=version,
        )

        agent_version.additional_properties = d
        return agent_version

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
