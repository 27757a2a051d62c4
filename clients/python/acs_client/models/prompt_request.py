from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.session_config import SessionConfig


T = TypeVar("T", bound="PromptRequest")


@_attrs_define
class PromptRequest:
    """Body of `POST /api/conversations/{id}/prompts`.

    Attributes:
        prompt (str): Must contain non-whitespace words (422 `invalid_prompt` when missing or blank).
        client_request_id (None | str | Unset): 1 to 200 characters, no NUL; stored on the turn as sent.
        session_config (None | SessionConfig | Unset):
    """

    prompt: str
    client_request_id: None | str | Unset = UNSET
    session_config: None | SessionConfig | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.session_config import SessionConfig  # noqa: PLC0415

        prompt = self.prompt

        client_request_id: None | str | Unset
        if isinstance(self.client_request_id, Unset):
            client_request_id = UNSET
        else:
            client_request_id = self.client_request_id

        session_config: dict[str, Any] | None | Unset
        if isinstance(self.session_config, Unset):
            session_config = UNSET
        elif isinstance(self.session_config, SessionConfig):
            session_config = self.session_config.to_dict()
        else:
            session_config = self.session_config

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "prompt": prompt,
            }
        )
        if client_request_id is not UNSET:
            field_dict["client_request_id"] = client_request_id
        if session_config is not UNSET:
            field_dict["session_config"] = session_config

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.session_config import SessionConfig  # noqa: PLC0415

        d = dict(src_dict)
        prompt = d.pop("prompt")

        def _parse_client_request_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        client_request_id = _parse_client_request_id(d.pop("client_request_id", UNSET))

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

        prompt_request = cls(
            prompt=prompt,
            client_request_id=client_request_id,
            session_config=session_config,
        )

        prompt_request.additional_properties = d
        return prompt_request

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
