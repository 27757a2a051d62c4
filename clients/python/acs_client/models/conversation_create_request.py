from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.api_access import ApiAccess
from ..models.sandbox_mode import SandboxMode
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.conversation_create_request_labels_type_0 import ConversationCreateRequestLabelsType0
    from ..models.image_input import ImageInput
    from ..models.permission_policy import PermissionPolicy
    from ..models.session_config import SessionConfig


T = TypeVar("T", bound="ConversationCreateRequest")


@_attrs_define
class ConversationCreateRequest:
    """Body of `POST /api/conversations`. Only `agent_id` is required; unknown fields are ignored.

    Attributes:
        agent_id (UUID):
        channel_id (None | str | Unset): At most 255 characters; resumes the channel's latest live conversation (200).
        client_request_id (None | str | Unset): 1 to 200 characters, no NUL; the caller's name for the first prompt.
            Ignored without `prompt`.
        environment_id (None | Unset | UUID):
        fresh (bool | None | Unset): With `channel_id`: open a new conversation instead of resuming.
        images (list[ImageInput] | None | Unset): Need a non-blank `prompt`.
        inference_credential_id (None | Unset | UUID): The credential set to run on instead of the agent's (owned by the
            caller and allowed by the
            agent's `allowed_inference_credential_ids`); pinned across wakes.
        labels (ConversationCreateRequestLabelsType0 | None | Unset): At most 32; key 1 to 64 bytes, value at most 256
            bytes, no NUL.
        machine_name (None | str | Unset): Suffix of the machine name: 1 to 40 letters, digits, `-`, `_`, starting with
            a letter or digit.
        model (None | str | Unset): `provider/model_id`, this conversation only.
        permission_policy (None | PermissionPolicy | Unset):
        prompt (None | str | Unset): The first turn's prompt; must contain non-whitespace words.
        queue (bool | None | Unset): At a concurrency ceiling, wait in the sandbox queue (202 with a `SandboxRequest`)
            instead of
            429/503. Starts with images or `sandbox_id` never wait.
        sandbox_api_access (ApiAccess | None | Unset):
        sandbox_id (None | Unset | UUID): Accepted; attaching to an existing sandbox is not supported yet.
        sandbox_mode (None | SandboxMode | Unset):
        session_config (None | SessionConfig | Unset):
        title (None | str | Unset): At most 120 characters.
        vault_id (None | Unset | UUID):
    """

    agent_id: UUID
    channel_id: None | str | Unset = UNSET
    client_request_id: None | str | Unset = UNSET
    environment_id: None | Unset | UUID = UNSET
    fresh: bool | None | Unset = UNSET
    images: list[ImageInput] | None | Unset = UNSET
    inference_credential_id: None | Unset | UUID = UNSET
    labels: ConversationCreateRequestLabelsType0 | None | Unset = UNSET
    machine_name: None | str | Unset = UNSET
    model: None | str | Unset = UNSET
    permission_policy: None | PermissionPolicy | Unset = UNSET
    prompt: None | str | Unset = UNSET
    queue: bool | None | Unset = UNSET
    sandbox_api_access: ApiAccess | None | Unset = UNSET
    sandbox_id: None | Unset | UUID = UNSET
    sandbox_mode: None | SandboxMode | Unset = UNSET
    session_config: None | SessionConfig | Unset = UNSET
    title: None | str | Unset = UNSET
    vault_id: None | Unset | UUID = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.conversation_create_request_labels_type_0 import ConversationCreateRequestLabelsType0  # noqa: PLC0415
        from ..models.permission_policy import PermissionPolicy  # noqa: PLC0415
        from ..models.session_config import SessionConfig  # noqa: PLC0415

        agent_id = str(self.agent_id)

        channel_id: None | str | Unset
        if isinstance(self.channel_id, Unset):
            channel_id = UNSET
        else:
            channel_id = self.channel_id

        client_request_id: None | str | Unset
        if isinstance(self.client_request_id, Unset):
            client_request_id = UNSET
        else:
            client_request_id = self.client_request_id

        environment_id: None | str | Unset
        if isinstance(self.environment_id, Unset):
            environment_id = UNSET
        elif isinstance(self.environment_id, UUID):
            environment_id = str(self.environment_id)
        else:
            environment_id = self.environment_id

        fresh: bool | None | Unset
        if isinstance(self.fresh, Unset):
            fresh = UNSET
        else:
            fresh = self.fresh

        images: list[dict[str, Any]] | None | Unset
        if isinstance(self.images, Unset):
            images = UNSET
        elif isinstance(self.images, list):
            images = []
            for images_type_0_item_data in self.images:
                images_type_0_item = images_type_0_item_data.to_dict()
                images.append(images_type_0_item)

        else:
            images = self.images

        inference_credential_id: None | str | Unset
        if isinstance(self.inference_credential_id, Unset):
            inference_credential_id = UNSET
        elif isinstance(self.inference_credential_id, UUID):
            inference_credential_id = str(self.inference_credential_id)
        else:
            inference_credential_id = self.inference_credential_id

        labels: dict[str, Any] | None | Unset
        if isinstance(self.labels, Unset):
            labels = UNSET
        elif isinstance(self.labels, ConversationCreateRequestLabelsType0):
            labels = self.labels.to_dict()
        else:
            labels = self.labels

        machine_name: None | str | Unset
        if isinstance(self.machine_name, Unset):
            machine_name = UNSET
        else:
            machine_name = self.machine_name

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

        prompt: None | str | Unset
        if isinstance(self.prompt, Unset):
            prompt = UNSET
        else:
            prompt = self.prompt

        queue: bool | None | Unset
        if isinstance(self.queue, Unset):
            queue = UNSET
        else:
            queue = self.queue

        sandbox_api_access: None | str | Unset
        if isinstance(self.sandbox_api_access, Unset):
            sandbox_api_access = UNSET
        elif isinstance(self.sandbox_api_access, ApiAccess):
            sandbox_api_access = self.sandbox_api_access.value
        else:
            sandbox_api_access = self.sandbox_api_access

        sandbox_id: None | str | Unset
        if isinstance(self.sandbox_id, Unset):
            sandbox_id = UNSET
        elif isinstance(self.sandbox_id, UUID):
            sandbox_id = str(self.sandbox_id)
        else:
            sandbox_id = self.sandbox_id

        sandbox_mode: None | str | Unset
        if isinstance(self.sandbox_mode, Unset):
            sandbox_mode = UNSET
        elif isinstance(self.sandbox_mode, SandboxMode):
            sandbox_mode = self.sandbox_mode.value
        else:
            sandbox_mode = self.sandbox_mode

        session_config: dict[str, Any] | None | Unset
        if isinstance(self.session_config, Unset):
            session_config = UNSET
        elif isinstance(self.session_config, SessionConfig):
            session_config = self.session_config.to_dict()
        else:
            session_config = self.session_config

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
            }
        )
        if channel_id is not UNSET:
            field_dict["channel_id"] = channel_id
        if client_request_id is not UNSET:
            field_dict["client_request_id"] = client_request_id
        if environment_id is not UNSET:
            field_dict["environment_id"] = environment_id
        if fresh is not UNSET:
            field_dict["fresh"] = fresh
        if images is not UNSET:
            field_dict["images"] = images
        if inference_credential_id is not UNSET:
            field_dict["inference_credential_id"] = inference_credential_id
        if labels is not UNSET:
            field_dict["labels"] = labels
        if machine_name is not UNSET:
            field_dict["machine_name"] = machine_name
        if model is not UNSET:
            field_dict["model"] = model
        if permission_policy is not UNSET:
            field_dict["permission_policy"] = permission_policy
        if prompt is not UNSET:
            field_dict["prompt"] = prompt
        if queue is not UNSET:
            field_dict["queue"] = queue
        if sandbox_api_access is not UNSET:
            field_dict["sandbox_api_access"] = sandbox_api_access
        if sandbox_id is not UNSET:
            field_dict["sandbox_id"] = sandbox_id
        if sandbox_mode is not UNSET:
            field_dict["sandbox_mode"] = sandbox_mode
        if session_config is not UNSET:
            field_dict["session_config"] = session_config
        if title is not UNSET:
            field_dict["title"] = title
        if vault_id is not UNSET:
            field_dict["vault_id"] = vault_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.conversation_create_request_labels_type_0 import ConversationCreateRequestLabelsType0  # noqa: PLC0415
        from ..models.image_input import ImageInput  # noqa: PLC0415
        from ..models.permission_policy import PermissionPolicy  # noqa: PLC0415
        from ..models.session_config import SessionConfig  # noqa: PLC0415

        d = dict(src_dict)
        agent_id = UUID(d.pop("agent_id"))

        def _parse_channel_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        channel_id = _parse_channel_id(d.pop("channel_id", UNSET))

        def _parse_client_request_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        client_request_id = _parse_client_request_id(d.pop("client_request_id", UNSET))

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

        def _parse_fresh(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        fresh = _parse_fresh(d.pop("fresh", UNSET))

        def _parse_images(data: object) -> list[ImageInput] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                images_type_0 = []
                _images_type_0 = data
                for images_type_0_item_data in _images_type_0:
                    images_type_0_item = ImageInput.from_dict(images_type_0_item_data)

                    images_type_0.append(images_type_0_item)

                return images_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[ImageInput] | None | Unset, data)

        images = _parse_images(d.pop("images", UNSET))

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

        def _parse_labels(data: object) -> ConversationCreateRequestLabelsType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                labels_type_0 = ConversationCreateRequestLabelsType0.from_dict(data)

                return labels_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ConversationCreateRequestLabelsType0 | None | Unset, data)

        labels = _parse_labels(d.pop("labels", UNSET))

        def _parse_machine_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        machine_name = _parse_machine_name(d.pop("machine_name", UNSET))

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

        def _parse_prompt(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        prompt = _parse_prompt(d.pop("prompt", UNSET))

        def _parse_queue(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        queue = _parse_queue(d.pop("queue", UNSET))

        def _parse_sandbox_api_access(data: object) -> ApiAccess | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                sandbox_api_access_type_0 = ApiAccess(data)

                return sandbox_api_access_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ApiAccess | None | Unset, data)

        sandbox_api_access = _parse_sandbox_api_access(d.pop("sandbox_api_access", UNSET))

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

        def _parse_sandbox_mode(data: object) -> None | SandboxMode | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                sandbox_mode_type_0 = SandboxMode(data)

                return sandbox_mode_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SandboxMode | Unset, data)

        sandbox_mode = _parse_sandbox_mode(d.pop("sandbox_mode", UNSET))

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

        conversation_create_request = cls(
            agent_id=agent_id,
            channel_id=channel_id,
            client_request_id=client_request_id,
            environment_id=environment_id,
            fresh=fresh,
            images=images,
            inference_credential_id=inference_credential_id,
            labels=labels,
            machine_name=machine_name,
            model=model,
            permission_policy=permission_policy,
            prompt=prompt,
            queue=queue,
            sandbox_api_access=sandbox_api_access,
            sandbox_id=sandbox_id,
            sandbox_mode=sandbox_mode,
            session_config=session_config,
            title=title,
            vault_id=vault_id,
        )

        conversation_create_request.additional_properties = d
        return conversation_create_request

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
