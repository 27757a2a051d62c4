from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.session_config import SessionConfig


T = TypeVar("T", bound="ReapplyRequest")


@_attrs_define
class ReapplyRequest:
    """`ReapplyRequest`: every field optional. A field not named keeps its value;
    null clears the environment override, the vault, the model (back to the
    agent's) or the session config (back to the agent's options).

        Attributes:
            agent_id (None | Unset | UUID): Another agent of the same runtime; absent (or null) keeps the current one.
            environment_id (None | Unset | UUID): The environment override; null returns to the agent's environment.
            model (None | str | Unset): `provider/model_id`; null returns to the agent's model.
            session_config (None | SessionConfig | Unset):
            vault_id (None | Unset | UUID): The vault override; null returns to the agent's vault.
    """

    agent_id: None | Unset | UUID = UNSET
    environment_id: None | Unset | UUID = UNSET
    model: None | str | Unset = UNSET
    session_config: None | SessionConfig | Unset = UNSET
    vault_id: None | Unset | UUID = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.session_config import SessionConfig  # noqa: PLC0415

        agent_id: None | str | Unset
        if isinstance(self.agent_id, Unset):
            agent_id = UNSET
        elif isinstance(self.agent_id, UUID):
            agent_id = str(self.agent_id)
        else:
            agent_id = self.agent_id

        environment_id: None | str | Unset
        if isinstance(self.environment_id, Unset):
            environment_id = UNSET
        elif isinstance(self.environment_id, UUID):
            environment_id = str(self.environment_id)
        else:
            environment_id = self.environment_id

        model: None | str | Unset
        if isinstance(self.model, Unset):
            model = UNSET
        else:
            model = self.model

        session_config: dict[str, Any] | None | Unset
        if isinstance(self.session_config, Unset):
            session_config = UNSET
        elif isinstance(self.session_config, SessionConfig):
            session_config = self.session_config.to_dict()
        else:
            session_config = self.session_config

        vault_id: None | str | Unset
        if isinstance(self.vault_id, Unset):
            vault_id = UNSET
        elif isinstance(self.vault_id, UUID):
            vault_id = str(self.vault_id)
        else:
            vault_id = self.vault_id

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if agent_id is not UNSET:
            field_dict["agent_id"] = agent_id
        if environment_id is not UNSET:
            field_dict["environment_id"] = environment_id
        if model is not UNSET:
            field_dict["model"] = model
        if session_config is not UNSET:
            field_dict["session_config"] = session_config
        if vault_id is not UNSET:
            field_dict["vault_id"] = vault_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.session_config import SessionConfig  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_agent_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                agent_id_type_0 = UUID(data)

                return agent_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        agent_id = _parse_agent_id(d.pop("agent_id", UNSET))

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

        def _parse_model(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        model = _parse_model(d.pop("model", UNSET))

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

        reapply_request = cls(
            agent_id=agent_id,
            environment_id=environment_id,
            model=model,
            session_config=session_config,
            vault_id=vault_id,
        )

        return reapply_request
