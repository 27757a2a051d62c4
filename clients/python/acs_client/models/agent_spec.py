from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.machine_provider import MachineProvider
from ..models.runtime import Runtime
from ..models.sandbox_mode import SandboxMode
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.agent_spec_metadata import AgentSpecMetadata
    from ..models.execution_limits import ExecutionLimits
    from ..models.mcp_server_entry import McpServerEntry
    from ..models.permission_policy import PermissionPolicy
    from ..models.session_config import SessionConfig


T = TypeVar("T", bound="AgentSpec")


@_attrs_define
class AgentSpec:
    """Every configurable field of an agent: what a version holds.

    Attributes:
        mcp_servers (list[McpServerEntry]):
        metadata (AgentSpecMetadata):
        name (str): 1 to 200 characters.
        runtime (Runtime): The runtime an agent runs on (DESIGN section 1); `acp` runs the agent's `command`.
        sandbox_mode (SandboxMode): `ephemeral`: one conversation's machine, reclaimed with it; `persistent`:
            the agent's home, shared and kept.
        skills (list[Any]):
        allowed_environment_ids (list[UUID] | None | Unset):
        allowed_inference_credential_ids (list[UUID] | None | Unset): null permits any owned set, `[]` only the agent's
            own, a list those.
        allowed_vault_ids (list[UUID] | None | Unset):
        command (list[str] | None | Unset): argv of the agent program: required for `acp`, an override for the others.
        description (None | str | Unset): At most 2000 characters.
        environment_id (None | Unset | UUID):
        execution_limits (ExecutionLimits | None | Unset):
        inference_credential_id (None | Unset | UUID):
        model (None | str | Unset): `provider/model_id`; not for `acp`.
        permission_policy (None | PermissionPolicy | Unset):
        provider (MachineProvider | None | Unset):
        runner_id (None | Unset | UUID): The account's runner, with `provider: runner` (and only then).
        session_config (None | SessionConfig | Unset):
        system_prompt (None | str | Unset):
        vault_id (None | Unset | UUID):
    """

    mcp_servers: list[McpServerEntry]
    metadata: AgentSpecMetadata
    name: str
    runtime: Runtime
    sandbox_mode: SandboxMode
    skills: list[Any]
    allowed_environment_ids: list[UUID] | None | Unset = UNSET
    allowed_inference_credential_ids: list[UUID] | None | Unset = UNSET
    allowed_vault_ids: list[UUID] | None | Unset = UNSET
    command: list[str] | None | Unset = UNSET
    description: None | str | Unset = UNSET
    environment_id: None | Unset | UUID = UNSET
    execution_limits: ExecutionLimits | None | Unset = UNSET
    inference_credential_id: None | Unset | UUID = UNSET
    model: None | str | Unset = UNSET
    permission_policy: None | PermissionPolicy | Unset = UNSET
    provider: MachineProvider | None | Unset = UNSET
    runner_id: None | Unset | UUID = UNSET
    session_config: None | SessionConfig | Unset = UNSET
    system_prompt: None | str | Unset = UNSET
    vault_id: None | Unset | UUID = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.execution_limits import ExecutionLimits  # noqa: PLC0415
        from ..models.permission_policy import PermissionPolicy  # noqa: PLC0415
        from ..models.session_config import SessionConfig  # noqa: PLC0415

        mcp_servers = []
        for mcp_servers_item_data in self.mcp_servers:
            mcp_servers_item = mcp_servers_item_data.to_dict()
            mcp_servers.append(mcp_servers_item)

        metadata = self.metadata.to_dict()

        name = self.name

        runtime = self.runtime.value

        sandbox_mode = self.sandbox_mode.value

        skills = self.skills

        allowed_environment_ids: list[str] | None | Unset
        if isinstance(self.allowed_environment_ids, Unset):
            allowed_environment_ids = UNSET
        elif isinstance(self.allowed_environment_ids, list):
            allowed_environment_ids = []
            for allowed_environment_ids_type_0_item_data in self.allowed_environment_ids:
                allowed_environment_ids_type_0_item = str(allowed_environment_ids_type_0_item_data)
                allowed_environment_ids.append(allowed_environment_ids_type_0_item)

        else:
            allowed_environment_ids = self.allowed_environment_ids

        allowed_inference_credential_ids: list[str] | None | Unset
        if isinstance(self.allowed_inference_credential_ids, Unset):
            allowed_inference_credential_ids = UNSET
        elif isinstance(self.allowed_inference_credential_ids, list):
            allowed_inference_credential_ids = []
            for allowed_inference_credential_ids_type_0_item_data in self.allowed_inference_credential_ids:
                allowed_inference_credential_ids_type_0_item = str(allowed_inference_credential_ids_type_0_item_data)
                allowed_inference_credential_ids.append(allowed_inference_credential_ids_type_0_item)

        else:
            allowed_inference_credential_ids = self.allowed_inference_credential_ids

        allowed_vault_ids: list[str] | None | Unset
        if isinstance(self.allowed_vault_ids, Unset):
            allowed_vault_ids = UNSET
        elif isinstance(self.allowed_vault_ids, list):
            allowed_vault_ids = []
            for allowed_vault_ids_type_0_item_data in self.allowed_vault_ids:
                allowed_vault_ids_type_0_item = str(allowed_vault_ids_type_0_item_data)
                allowed_vault_ids.append(allowed_vault_ids_type_0_item)

        else:
            allowed_vault_ids = self.allowed_vault_ids

        command: list[str] | None | Unset
        if isinstance(self.command, Unset):
            command = UNSET
        elif isinstance(self.command, list):
            command = self.command

        else:
            command = self.command

        description: None | str | Unset
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        environment_id: None | str | Unset
        if isinstance(self.environment_id, Unset):
            environment_id = UNSET
        elif isinstance(self.environment_id, UUID):
            environment_id = str(self.environment_id)
        else:
            environment_id = self.environment_id

        execution_limits: dict[str, Any] | None | Unset
        if isinstance(self.execution_limits, Unset):
            execution_limits = UNSET
        elif isinstance(self.execution_limits, ExecutionLimits):
            execution_limits = self.execution_limits.to_dict()
        else:
            execution_limits = self.execution_limits

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

        permission_policy: dict[str, Any] | None | Unset
        if isinstance(self.permission_policy, Unset):
            permission_policy = UNSET
        elif isinstance(self.permission_policy, PermissionPolicy):
            permission_policy = self.permission_policy.to_dict()
        else:
            permission_policy = self.permission_policy

        provider: None | str | Unset
        if isinstance(self.provider, Unset):
            provider = UNSET
        elif isinstance(self.provider, MachineProvider):
            provider = self.provider.value
        else:
            provider = self.provider

        runner_id: None | str | Unset
        if isinstance(self.runner_id, Unset):
            runner_id = UNSET
        elif isinstance(self.runner_id, UUID):
            runner_id = str(self.runner_id)
        else:
            runner_id = self.runner_id

        session_config: dict[str, Any] | None | Unset
        if isinstance(self.session_config, Unset):
            session_config = UNSET
        elif isinstance(self.session_config, SessionConfig):
            session_config = self.session_config.to_dict()
        else:
            session_config = self.session_config

        system_prompt: None | str | Unset
        if isinstance(self.system_prompt, Unset):
            system_prompt = UNSET
        else:
            system_prompt = self.system_prompt

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
                "mcp_servers": mcp_servers,
                "metadata": metadata,
                "name": name,
                "runtime": runtime,
                "sandbox_mode": sandbox_mode,
                "skills": skills,
            }
        )
        if allowed_environment_ids is not UNSET:
            field_dict["allowed_environment_ids"] = allowed_environment_ids
        if allowed_inference_credential_ids is not UNSET:
            field_dict["allowed_inference_credential_ids"] = allowed_inference_credential_ids
        if allowed_vault_ids is not UNSET:
            field_dict["allowed_vault_ids"] = allowed_vault_ids
        if command is not UNSET:
            field_dict["command"] = command
        if description is not UNSET:
            field_dict["description"] = description
        if environment_id is not UNSET:
            field_dict["environment_id"] = environment_id
        if execution_limits is not UNSET:
            field_dict["execution_limits"] = execution_limits
        if inference_credential_id is not UNSET:
            field_dict["inference_credential_id"] = inference_credential_id
        if model is not UNSET:
            field_dict["model"] = model
        if permission_policy is not UNSET:
            field_dict["permission_policy"] = permission_policy
        if provider is not UNSET:
            field_dict["provider"] = provider
        if runner_id is not UNSET:
            field_dict["runner_id"] = runner_id
        if session_config is not UNSET:
            field_dict["session_config"] = session_config
        if system_prompt is not UNSET:
            field_dict["system_prompt"] = system_prompt
        if vault_id is not UNSET:
            field_dict["vault_id"] = vault_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.agent_spec_metadata import AgentSpecMetadata  # noqa: PLC0415
        from ..models.execution_limits import ExecutionLimits  # noqa: PLC0415
        from ..models.mcp_server_entry import McpServerEntry  # noqa: PLC0415
        from ..models.permission_policy import PermissionPolicy  # noqa: PLC0415
        from ..models.session_config import SessionConfig  # noqa: PLC0415

        d = dict(src_dict)
        mcp_servers = []
        _mcp_servers = d.pop("mcp_servers")
        for mcp_servers_item_data in _mcp_servers:
            mcp_servers_item = McpServerEntry.from_dict(mcp_servers_item_data)

            mcp_servers.append(mcp_servers_item)

        metadata = AgentSpecMetadata.from_dict(d.pop("metadata"))

        name = d.pop("name")

        runtime = Runtime(d.pop("runtime"))

        sandbox_mode = SandboxMode(d.pop("sandbox_mode"))

        skills = cast(list[Any], d.pop("skills"))

        def _parse_allowed_environment_ids(data: object) -> list[UUID] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                allowed_environment_ids_type_0 = []
                _allowed_environment_ids_type_0 = data
                for allowed_environment_ids_type_0_item_data in _allowed_environment_ids_type_0:
                    allowed_environment_ids_type_0_item = UUID(allowed_environment_ids_type_0_item_data)

                    allowed_environment_ids_type_0.append(allowed_environment_ids_type_0_item)

                return allowed_environment_ids_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[UUID] | None | Unset, data)

        allowed_environment_ids = _parse_allowed_environment_ids(d.pop("allowed_environment_ids", UNSET))

        def _parse_allowed_inference_credential_ids(data: object) -> list[UUID] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                allowed_inference_credential_ids_type_0 = []
                _allowed_inference_credential_ids_type_0 = data
                for allowed_inference_credential_ids_type_0_item_data in _allowed_inference_credential_ids_type_0:
                    allowed_inference_credential_ids_type_0_item = UUID(
                        allowed_inference_credential_ids_type_0_item_data
                    )

                    allowed_inference_credential_ids_type_0.append(allowed_inference_credential_ids_type_0_item)

                return allowed_inference_credential_ids_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[UUID] | None | Unset, data)

        allowed_inference_credential_ids = _parse_allowed_inference_credential_ids(
            d.pop("allowed_inference_credential_ids", UNSET)
        )

        def _parse_allowed_vault_ids(data: object) -> list[UUID] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                allowed_vault_ids_type_0 = []
                _allowed_vault_ids_type_0 = data
                for allowed_vault_ids_type_0_item_data in _allowed_vault_ids_type_0:
                    allowed_vault_ids_type_0_item = UUID(allowed_vault_ids_type_0_item_data)

                    allowed_vault_ids_type_0.append(allowed_vault_ids_type_0_item)

                return allowed_vault_ids_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[UUID] | None | Unset, data)

        allowed_vault_ids = _parse_allowed_vault_ids(d.pop("allowed_vault_ids", UNSET))

        def _parse_command(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                command_type_0 = cast(list[str], data)

                return command_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        command = _parse_command(d.pop("command", UNSET))

        def _parse_description(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        description = _parse_description(d.pop("description", UNSET))

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

        def _parse_execution_limits(data: object) -> ExecutionLimits | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                execution_limits_type_0 = ExecutionLimits.from_dict(data)

                return execution_limits_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ExecutionLimits | None | Unset, data)

        execution_limits = _parse_execution_limits(d.pop("execution_limits", UNSET))

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

        def _parse_permission_policy(data: object) -> None | PermissionPolicy | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                permission_policy_type_0 = PermissionPolicy.from_dict(data)

                return permission_policy_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | PermissionPolicy | Unset, data)

        permission_policy = _parse_permission_policy(d.pop("permission_policy", UNSET))

        def _parse_provider(data: object) -> MachineProvider | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                provider_type_0 = MachineProvider(data)

                return provider_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(MachineProvider | None | Unset, data)

        provider = _parse_provider(d.pop("provider", UNSET))

        def _parse_runner_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                runner_id_type_0 = UUID(data)

                return runner_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        runner_id = _parse_runner_id(d.pop("runner_id", UNSET))

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

        def _parse_system_prompt(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        system_prompt = _parse_system_prompt(d.pop("system_prompt", UNSET))

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

        agent_spec = cls(
            mcp_servers=mcp_servers,
            metadata=metadata,
            name=name,
            runtime=runtime,
            sandbox_mode=sandbox_mode,
            skills=skills,
            allowed_environment_ids=allowed_environment_ids,
            allowed_inference_credential_ids=allowed_inference_credential_ids,
            allowed_vault_ids=allowed_vault_ids,
            command=command,
            description=description,
            environment_id=environment_id,
            execution_limits=execution_limits,
            inference_credential_id=inference_credential_id,
            model=model,
            permission_policy=permission_policy,
            provider=provider,
            runner_id=runner_id,
            session_config=session_config,
            system_prompt=system_prompt,
            vault_id=vault_id,
        )

        agent_spec.additional_properties = d
        return agent_spec

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
