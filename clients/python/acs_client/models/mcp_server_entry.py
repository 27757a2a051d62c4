from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.mcp_server_entry_env_item import McpServerEntryEnvItem
    from ..models.mcp_server_entry_headers_item import McpServerEntryHeadersItem


T = TypeVar("T", bound="McpServerEntry")


@_attrs_define
class McpServerEntry:
    """ACP's shapes: `{name, command, args, env}` for a program in the machine, `{type: "http", name, url, headers}` for a
    remote server.

        Attributes:
            name (str):
            args (list[str] | Unset):
            command (str | Unset): A program in the machine
            env (list[McpServerEntryEnvItem] | Unset):
            headers (list[McpServerEntryHeadersItem] | Unset):
            type_ (str | Unset): `http` or `sse` for a remote server; absent for a program
            url (str | Unset): A remote server's address
    """

    name: str
    args: list[str] | Unset = UNSET
    command: str | Unset = UNSET
    env: list[McpServerEntryEnvItem] | Unset = UNSET
    headers: list[McpServerEntryHeadersItem] | Unset = UNSET
    type_: str | Unset = UNSET
    url: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        args: list[str] | Unset = UNSET
        if not isinstance(self.args, Unset):
            args = self.args

        command = self.command

        env: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.env, Unset):
            env = []
            for env_item_data in self.env:
                env_item = env_item_data.to_dict()
                env.append(env_item)

        headers: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.headers, Unset):
            headers = []
            for headers_item_data in self.headers:
                headers_item = headers_item_data.to_dict()
                headers.append(headers_item)

        type_ = self.type_

        url = self.url

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
            }
        )
        if args is not UNSET:
            field_dict["args"] = args
        if command is not UNSET:
            field_dict["command"] = command
        if env is not UNSET:
            field_dict["env"] = env
        if headers is not UNSET:
            field_dict["headers"] = headers
        if type_ is not UNSET:
            field_dict["type"] = type_
        if url is not UNSET:
            field_dict["url"] = url

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.mcp_server_entry_env_item import McpServerEntryEnvItem  # noqa: PLC0415
        from ..models.mcp_server_entry_headers_item import McpServerEntryHeadersItem  # noqa: PLC0415

        d = dict(src_dict)
        name = d.pop("name")

        args = cast(list[str], d.pop("args", UNSET))

        command = d.pop("command", UNSET)

        _env = d.pop("env", UNSET)
        env: list[McpServerEntryEnvItem] | Unset = UNSET
        if _env is not UNSET:
            env = []
            for env_item_data in _env:
                env_item = McpServerEntryEnvItem.from_dict(env_item_data)

                env.append(env_item)

        _headers = d.pop("headers", UNSET)
        headers: list[McpServerEntryHeadersItem] | Unset = UNSET
        if _headers is not UNSET:
            headers = []
            for headers_item_data in _headers:
                headers_item = McpServerEntryHeadersItem.from_dict(headers_item_data)

                headers.append(headers_item)

        type_ = d.pop("type", UNSET)

        url = d.pop("url", UNSET)

        mcp_server_entry = cls(
            name=name,
            args=args,
            command=command,
            env=env,
            headers=headers,
            type_=type_,
            url=url,
        )

        mcp_server_entry.additional_properties = d
        return mcp_server_entry

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
