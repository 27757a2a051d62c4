from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.conversation_status import ConversationStatus
from ..models.runtime import Runtime
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.conversation_labels import ConversationLabels
    from ..models.session_config import SessionConfig
    from ..models.session_config_option import SessionConfigOption


T = TypeVar("T", bound="Conversation")


@_attrs_define
class Conversation:
    """A conversation: a thread between the caller and an agent, run on a sandbox.

    Attributes:
        agent_id (UUID):
        id (UUID):
        inserted_at (datetime.datetime):
        labels (ConversationLabels):
        runtime (Runtime): The runtime an agent runs on (DESIGN section 1); `acp` runs the agent's `command`.
        status (ConversationStatus):
        updated_at (datetime.datetime):
        channel_id (None | str | Unset):
        ended_at (datetime.datetime | None | Unset):
        environment_id (None | Unset | UUID): The environment override the conversation is pinned to; null uses the
            agent's.
        inference_credential_id (None | Unset | UUID): The credential set chosen at create; null follows the agent's,
            then the account default.
        model (None | str | Unset): `provider/model_id`; null follows the agent.
        sandbox_id (None | Unset | UUID): The machine it runs on; null until one is assigned.
        session_config (None | SessionConfig | Unset):
        session_config_options (list[SessionConfigOption] | None | Unset): What the runtime advertised before the latest
            prompt (`id`, `category`, `type`, `options`,
            `currentValue` each); null until a turn has run.
        title (None | str | Unset):
        vault_id (None | Unset | UUID): The vault override; null uses the agent's.
    """

    agent_id: UUID
    id: UUID
    inserted_at: datetime.datetime
    labels: ConversationLabels
    runtime: Runtime
    status: ConversationStatus
    updated_at: datetime.datetime
    channel_id: None | str | Unset = UNSET
    ended_at: datetime.datetime | None | Unset = UNSET
    environment_id: None | Unset | UUID = UNSET
    inference_credential_id: None | Unset | UUID = UNSET
    model: None | str | Unset = UNSET
    sandbox_id: None | Unset | UUID = UNSET
    session_config: None | SessionConfig | Unset = UNSET
    session_config_options: list[SessionConfigOption] | None | Unset = UNSET
    title: None | str | Unset = UNSET
    vault_id: None | Unset | UUID = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.session_config import SessionConfig  # noqa: PLC0415

        agent_id = str(self.agent_id)

        id = str(self.id)

        inserted_at = self.inserted_at.isoformat()

        labels = self.labels.to_dict()

        runtime = self.runtime.value

        status = self.status.value

        updated_at = self.updated_at.isoformat()

        channel_id: None | str | Unset
        if isinstance(self.channel_id, Unset):
            channel_id = UNSET
        else:
            channel_id = self.channel_id

        ended_at: None | str | Unset
        if isinstance(self.ended_at, Unset):
            ended_at = UNSET
        elif isinstance(self.ended_at, datetime.datetime):
            ended_at = self.ended_at.isoformat()
        else:
            ended_at = self.ended_at

        environment_id: None | str | Unset
        if isinstance(self.environment_id, Unset):
            environment_id = UNSET
        elif isinstance(self.environment_id, UUID):
            environment_id = str(self.environment_id)
        else:
            environment_id = self.environment_id

        inference_credential_id: None | str | Unset
        if isinstance(self.inference_credential_id, Unset):
            inference_credential_id = UNSET
        elif isinstance(self.inference_credential_id, UUID):
            inference_credential_id = str(self.inference_credential_id)
        else:
            inference_credential_id = self.inference_credential_id

        model: None | str | Unset
        if isinstance(self.model, Unset):
            model = UNSET
        else:
            model = self.model

        sandbox_id: None | str | Unset
        if isinstance(self.sandbox_id, Unset):
            sandbox_id = UNSET
        elif isinstance(self.sandbox_id, UUID):
            sandbox_id = str(self.sandbox_id)
        else:
            sandbox_id = self.sandbox_id

        session_config: dict[str, Any] | None | Unset
        if isinstance(self.session_config, Unset):
            session_config = UNSET
        elif isinstance(self.session_config, SessionConfig):
            session_config = self.session_config.to_dict()
        else:
            session_config = self.session_config

        session_config_options: list[dict[str, Any]] | None | Unset
        if isinstance(self.session_config_options, Unset):
            session_config_options = UNSET
        elif isinstance(self.session_config_options, list):
            session_config_options = []
            for session_config_options_type_0_item_data in self.session_config_options:
                session_config_options_type_0_item = session_config_options_type_0_item_data.to_dict()
                session_config_options.append(session_config_options_type_0_item)

        else:
            session_config_options = self.session_config_options

        title: None | str | Unset
        if isinstance(self.title, Unset):
            title = UNSET
        else:
            title = self.title

        vault_id: None | str | Unset
        if isinstance(self.vault_id, Unset):
            vault_id = UNSET
        elif isinstance(self.vault_id, UUID):
            vault_id = str(self.vault_id)
        else:
            vault_id = self.vault_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "agent_id": agent_id,
                "id": id,
                "inserted_at": inserted_at,
                "labels": labels,
                "runtime": runtime,
                "status": status,
                "updated_at": updated_at,
            }
        )
        if channel_id is not UNSET:
            field_dict["channel_id"] = channel_id
        if ended_at is not UNSET:
            field_dict["ended_at"] = ended_at
        if environment_id is not UNSET:
            field_dict["environment_id"] = environment_id
        if inference_credential_id is not UNSET:
            field_dict["inference_credential_id"] = inference_credential_id
        if model is not UNSET:
            field_dict["model"] = model
        if sandbox_id is not UNSET:
            field_dict["sandbox_id"] = sandbox_id
        if session_config is not UNSET:
            field_dict["session_config"] = session_config
        if session_config_options is not UNSET:
            field_dict["session_config_options"] = session_config_options
        if title is not UNSET:
            field_dict["title"] = title
        if vault_id is not UNSET:
            field_dict["vault_id"] = vault_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.conversation_labels import ConversationLabels  # noqa: PLC0415
        from ..models.session_config import SessionConfig  # noqa: PLC0415
        from ..models.session_config_option import SessionConfigOption  # noqa: PLC0415

        d = dict(src_dict)
        agent_id = UUID(d.pop("agent_id"))

        id = UUID(d.pop("id"))

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        labels = ConversationLabels.from_dict(d.pop("labels"))

        runtime = Runtime(d.pop("runtime"))

        status = ConversationStatus(d.pop("status"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_channel_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        channel_id = _parse_channel_id(d.pop("channel_id", UNSET))

        def _parse_ended_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                ended_at_type_0 = datetime.datetime.fromisoformat(data)

                return ended_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        ended_at = _parse_ended_at(d.pop("ended_at", UNSET))

        def _parse_environment_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                environment_id_type_0 = UUID(data)

                return environment_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        environment_id = _parse_environment_id(d.pop("environment_id", UNSET))

        def _parse_inference_credential_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                inference_credential_id_type_0 = UUID(data)

                return inference_credential_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        inference_credential_id = _parse_inference_credential_id(d.pop("inference_credential_id", UNSET))

        def _parse_model(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        model = _parse_model(d.pop("model", UNSET))

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

        def _parse_session_config(data: object) -> None | SessionConfig | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                session_config_type_0 = SessionConfig.from_dict(data)

                return session_config_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SessionConfig | Unset, data)

        session_config = _parse_session_config(d.pop("session_config", UNSET))

        def _parse_session_config_options(data: object) -> list[SessionConfigOption] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                session_config_options_type_0 = []
                _session_config_options_type_0 = data
                for session_config_options_type_0_item_data in _session_config_options_type_0:
                    session_config_options_type_0_item = SessionConfigOption.from_dict(
                        session_config_options_type_0_item_data
                    )

                    session_config_options_type_0.append(session_config_options_type_0_item)

                return session_config_options_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[SessionConfigOption] | None | Unset, data)

        session_config_options = _parse_session_config_options(d.pop("session_config_options", UNSET))

        def _parse_title(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        title = _parse_title(d.pop("title", UNSET))

        def _parse_vault_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                vault_id_type_0 = UUID(data)

                return vault_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        vault_id = _parse_vault_id(d.pop("vault_id", UNSET))

        conversation = cls(
            agent_id=agent_id,
            id=id,
            inserted_at=inserted_at,
            labels=labels,
            runtime=runtime,
            status=status,
            updated_at=updated_at,
            channel_id=channel_id,
            ended_at=ended_at,
            environment_id=environment_id,
            inference_credential_id=inference_credential_id,
            model=model,
            sandbox_id=sandbox_id,
            session_config=session_config,
            session_config_options=session_config_options,
            title=title,
            vault_id=vault_id,
        )

        conversation.additional_properties = d
        return conversation

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
