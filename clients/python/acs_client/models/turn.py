from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.turn_origin import TurnOrigin
from ..models.turn_status import TurnStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.config_selection import ConfigSelection
    from ..models.inference import Inference
    from ..models.turn_usage import TurnUsage


T = TypeVar("T", bound="Turn")


@_attrs_define
class Turn:
    """One prompt and its reply.

    Attributes:
        conversation_id (UUID):
        id (UUID):
        inserted_at (datetime.datetime):
        origin (TurnOrigin): `api`, or `autonomous` for a turn the service opened itself (a schedule's run).
        prompt (str):
        status (TurnStatus): `running` until the turn ends `done`, `failed` or `interrupted`.
        client_request_id (None | str | Unset): The value sent with the prompt, character for character.
        config_selection (ConfigSelection | None | Unset):
        exit_code (int | None | Unset):
        finished_at (datetime.datetime | None | Unset):
        inference (Inference | None | Unset):
        limit_reason (None | str | Unset): Set on a turn ended by a limit; read it before `exit_code`.
        model_selection (None | str | Unset): The model asked for.
        stop_reason (None | str | Unset):
        usage (None | TurnUsage | Unset):
    """

    conversation_id: UUID
    id: UUID
    inserted_at: datetime.datetime
    origin: TurnOrigin
    prompt: str
    status: TurnStatus
    client_request_id: None | str | Unset = UNSET
    config_selection: ConfigSelection | None | Unset = UNSET
    exit_code: int | None | Unset = UNSET
    finished_at: datetime.datetime | None | Unset = UNSET
    inference: Inference | None | Unset = UNSET
    limit_reason: None | str | Unset = UNSET
    model_selection: None | str | Unset = UNSET
    stop_reason: None | str | Unset = UNSET
    usage: None | TurnUsage | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.config_selection import ConfigSelection  # noqa: PLC0415
        from ..models.inference import Inference  # noqa: PLC0415
        from ..models.turn_usage import TurnUsage  # noqa: PLC0415

        conversation_id = str(self.conversation_id)

        id = str(self.id)

        inserted_at = self.inserted_at.isoformat()

        origin = self.origin.value

        prompt = self.prompt

        status = self.status.value

        client_request_id: None | str | Unset
        if isinstance(self.client_request_id, Unset):
            client_request_id = UNSET
        else:
            client_request_id = self.client_request_id

        config_selection: dict[str, Any] | None | Unset
        if isinstance(self.config_selection, Unset):
            config_selection = UNSET
        elif isinstance(self.config_selection, ConfigSelection):
            config_selection = self.config_selection.to_dict()
        else:
            config_selection = self.config_selection

        exit_code: int | None | Unset
        if isinstance(self.exit_code, Unset):
            exit_code = UNSET
        else:
            exit_code = self.exit_code

        finished_at: None | str | Unset
        if isinstance(self.finished_at, Unset):
            finished_at = UNSET
        elif isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        inference: dict[str, Any] | None | Unset
        if isinstance(self.inference, Unset):
            inference = UNSET
        elif isinstance(self.inference, Inference):
            inference = self.inference.to_dict()
        else:
            inference = self.inference

        limit_reason: None | str | Unset
        if isinstance(self.limit_reason, Unset):
            limit_reason = UNSET
        else:
            limit_reason = self.limit_reason

        model_selection: None | str | Unset
        if isinstance(self.model_selection, Unset):
            model_selection = UNSET
        else:
            model_selection = self.model_selection

        stop_reason: None | str | Unset
        if isinstance(self.stop_reason, Unset):
            stop_reason = UNSET
        else:
            stop_reason = self.stop_reason

        usage: dict[str, Any] | None | Unset
        if isinstance(self.usage, Unset):
            usage = UNSET
        elif isinstance(self.usage, TurnUsage):
            usage = self.usage.to_dict()
        else:
            usage = self.usage

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "conversation_id": conversation_id,
                "id": id,
                "inserted_at": inserted_at,
                "origin": origin,
                "prompt": prompt,
                "status": status,
            }
        )
        if client_request_id is not UNSET:
            field_dict["client_request_id"] = client_request_id
        if config_selection is not UNSET:
            field_dict["config_selection"] = config_selection
        if exit_code is not UNSET:
            field_dict["exit_code"] = exit_code
        if finished_at is not UNSET:
            field_dict["finished_at"] = finished_at
        if inference is not UNSET:
            field_dict["inference"] = inference
        if limit_reason is not UNSET:
            field_dict["limit_reason"] = limit_reason
        if model_selection is not UNSET:
            field_dict["model_selection"] = model_selection
        if stop_reason is not UNSET:
            field_dict["stop_reason"] = stop_reason
        if usage is not UNSET:
            field_dict["usage"] = usage

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.config_selection import ConfigSelection  # noqa: PLC0415
        from ..models.inference import Inference  # noqa: PLC0415
        from ..models.turn_usage import TurnUsage  # noqa: PLC0415

        d = dict(src_dict)
        conversation_id = UUID(d.pop("conversation_id"))

        id = UUID(d.pop("id"))

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        origin = TurnOrigin(d.pop("origin"))

        prompt = d.pop("prompt")

        status = TurnStatus(d.pop("status"))

        def _parse_client_request_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        client_request_id = _parse_client_request_id(d.pop("client_request_id", UNSET))

        def _parse_config_selection(data: object) -> ConfigSelection | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                config_selection_type_0 = ConfigSelection.from_dict(data)

                return config_selection_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ConfigSelection | None | Unset, data)

        config_selection = _parse_config_selection(d.pop("config_selection", UNSET))

        def _parse_exit_code(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        exit_code = _parse_exit_code(d.pop("exit_code", UNSET))

        def _parse_finished_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                finished_at_type_0 = datetime.datetime.fromisoformat(data)

                return finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        finished_at = _parse_finished_at(d.pop("finished_at", UNSET))

        def _parse_inference(data: object) -> Inference | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                inference_type_0 = Inference.from_dict(data)

                return inference_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Inference | None | Unset, data)

        inference = _parse_inference(d.pop("inference", UNSET))

        def _parse_limit_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        limit_reason = _parse_limit_reason(d.pop("limit_reason", UNSET))

        def _parse_model_selection(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        model_selection = _parse_model_selection(d.pop("model_selection", UNSET))

        def _parse_stop_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        stop_reason = _parse_stop_reason(d.pop("stop_reason", UNSET))

        def _parse_usage(data: object) -> None | TurnUsage | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                usage_type_0 = TurnUsage.from_dict(data)

                return usage_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TurnUsage | Unset, data)

        usage = _parse_usage(d.pop("usage", UNSET))

        turn = cls(
            conversation_id=conversation_id,
            id=id,
            inserted_at=inserted_at,
            origin=origin,
            prompt=prompt,
            status=status,
            client_request_id=client_request_id,
            config_selection=config_selection,
            exit_code=exit_code,
            finished_at=finished_at,
            inference=inference,
            limit_reason=limit_reason,
            model_selection=model_selection,
            stop_reason=stop_reason,
            usage=usage,
        )

        turn.additional_properties = d
        return turn

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
