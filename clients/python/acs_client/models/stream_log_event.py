from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.event_kind import EventKind
from ..models.stage_state_name import StageStateName
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.block import Block


T = TypeVar("T", bound="StreamLogEvent")


@_attrs_define
class StreamLogEvent:
    """A frame of an event stream (its id travels in the `id:` line).

    Attributes:
        data (str): Output text, or JSON-encoded metadata for stage events; secrets read `[REDACTED]`.
        kind (EventKind): `output` (text the agent or machine wrote) or `stage` (a step began or ended).
        stream (str): `stdout`/`stderr` for output; empty for stage.
        ts (datetime.datetime):
        agent_id (None | Unset | UUID): On the team stream only: the teammate.
        blocks (list[Block] | None | Unset): Only with `?blocks=true`; empty for non-output events.
        conversation_id (None | Unset | UUID): On the all-conversations and team streams only.
        duration_ms (int | None | Unset): On the all-conversations stream only (null when the stage took no measured
            time).
        stage (None | str | Unset):
        state (None | StageStateName | Unset):
        turn_id (None | Unset | UUID):
    """

    data: str
    kind: EventKind
    stream: str
    ts: datetime.datetime
    agent_id: None | Unset | UUID = UNSET
    blocks: list[Block] | None | Unset = UNSET
    conversation_id: None | Unset | UUID = UNSET
    duration_ms: int | None | Unset = UNSET
    stage: None | str | Unset = UNSET
    state: None | StageStateName | Unset = UNSET
    turn_id: None | Unset | UUID = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = self.data

        kind = self.kind.value

        stream = self.stream

        ts = self.ts.isoformat()

        agent_id: None | str | Unset
        if isinstance(self.agent_id, Unset):
            agent_id = UNSET
        elif isinstance(self.agent_id, UUID):
            agent_id = str(self.agent_id)
        else:
            agent_id = self.agent_id

        blocks: list[dict[str, Any]] | None | Unset
        if isinstance(self.blocks, Unset):
            blocks = UNSET
        elif isinstance(self.blocks, list):
            blocks = []
            for blocks_type_0_item_data in self.blocks:
                blocks_type_0_item = blocks_type_0_item_data.to_dict()
                blocks.append(blocks_type_0_item)

        else:
            blocks = self.blocks

        conversation_id: None | str | Unset
        if isinstance(self.conversation_id, Unset):
            conversation_id = UNSET
        elif isinstance(self.conversation_id, UUID):
            conversation_id = str(self.conversation_id)
        else:
            conversation_id = self.conversation_id

        duration_ms: int | None | Unset
        if isinstance(self.duration_ms, Unset):
            duration_ms = UNSET
        else:
            duration_ms = self.duration_ms

        stage: None | str | Unset
        if isinstance(self.stage, Unset):
            stage = UNSET
        else:
            stage = self.stage

        state: None | str | Unset
        if isinstance(self.state, Unset):
            state = UNSET
        elif isinstance(self.state, StageStateName):
            state = self.state.value
        else:
            state = self.state

        turn_id: None | str | Unset
        if isinstance(self.turn_id, Unset):
            turn_id = UNSET
        elif isinstance(self.turn_id, UUID):
            turn_id = str(self.turn_id)
        else:
            turn_id = self.turn_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "data": data,
                "kind": kind,
                "stream": stream,
                "ts": ts,
            }
        )
        if agent_id is not UNSET:
            field_dict["agent_id"] = agent_id
        if blocks is not UNSET:
            field_dict["blocks"] = blocks
        if conversation_id is not UNSET:
            field_dict["conversation_id"] = conversation_id
        if duration_ms is not UNSET:
            field_dict["duration_ms"] = duration_ms
        if stage is not UNSET:
            field_dict["stage"] = stage
        if state is not UNSET:
            field_dict["state"] = state
        if turn_id is not UNSET:
            field_dict["turn_id"] = turn_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.block import Block  # noqa: PLC0415

        d = dict(src_dict)
        data = d.pop("data")

        kind = EventKind(d.pop("kind"))

        stream = d.pop("stream")

        ts = datetime.datetime.fromisoformat(d.pop("ts"))

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

        def _parse_blocks(data: object) -> list[Block] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                blocks_type_0 = []
                _blocks_type_0 = data
                for blocks_type_0_item_data in _blocks_type_0:
                    blocks_type_0_item = Block.from_dict(blocks_type_0_item_data)

                    blocks_type_0.append(blocks_type_0_item)

                return blocks_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[Block] | None | Unset, data)

        blocks = _parse_blocks(d.pop("blocks", UNSET))

        def _parse_conversation_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                conversation_id_type_0 = UUID(data)

                return conversation_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        conversation_id = _parse_conversation_id(d.pop("conversation_id", UNSET))

        def _parse_duration_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        duration_ms = _parse_duration_ms(d.pop("duration_ms", UNSET))

        def _parse_stage(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        stage = _parse_stage(d.pop("stage", UNSET))

        def _parse_state(data: object) -> None | StageStateName | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                state_type_0 = StageStateName(data)

                return state_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | StageStateName | Unset, data)

        state = _parse_state(d.pop("state", UNSET))

        def _parse_turn_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                turn_id_type_0 = UUID(data)

                return turn_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        turn_id = _parse_turn_id(d.pop("turn_id", UNSET))

        stream_log_event = cls(
            data=data,
            kind=kind,
            stream=stream,
            ts=ts,
            agent_id=agent_id,
            blocks=blocks,
            conversation_id=conversation_id,
            duration_ms=duration_ms,
            stage=stage,
            state=state,
            turn_id=turn_id,
        )

        stream_log_event.additional_properties = d
        return stream_log_event

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
