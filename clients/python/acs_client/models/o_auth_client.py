from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="OAuthClient")


@_attrs_define
class OAuthClient:
    """A registered OAuth client (a public client: it proves itself with PKCE, not a secret).

    Attributes:
        client_id (UUID): The `client_id` of the authorization request (the same value as `id`).
        id (UUID):
        inserted_at (datetime.datetime):
        name (str):
        published (bool): Published by an operator: any account may sign in with it, and only an
            operator changes or removes it. Until then it signs in only this account.
        redirect_uris (list[str]): Exact redirect URIs.
        updated_at (datetime.datetime):
        published_at (datetime.datetime | None | Unset):
    """

    client_id: UUID
    id: UUID
    inserted_at: datetime.datetime
    name: str
    published: bool
    redirect_uris: list[str]
    updated_at: datetime.datetime
    published_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        client_id = str(self.client_id)

        id = str(self.id)

        inserted_at = self.inserted_at.isoformat()

        name = self.name

        published = self.published

        redirect_uris = self.redirect_uris

        updated_at = self.updated_at.isoformat()

        published_at: None | str | Unset
        if isinstance(self.published_at, Unset):
            published_at = UNSET
        elif isinstance(self.published_at, datetime.datetime):
            published_at = self.published_at.isoformat()
        else:
            published_at = self.published_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "client_id": client_id,
                "id": id,
                "inserted_at": inserted_at,
                "name": name,
                "published": published,
                "redirect_uris": redirect_uris,
                "updated_at": updated_at,
            }
        )
        if published_at is not UNSET:
            field_dict["published_at"] = published_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        client_id = UUID(d.pop("client_id"))

        id = UUID(d.pop("id"))

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        name = d.pop("name")

        published = d.pop("published")

        redirect_uris = cast(list[str], d.pop("redirect_uris"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_published_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                published_at_type_0 = datetime.datetime.fromisoformat(data)

                return published_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        published_at = _parse_published_at(d.pop("published_at", UNSET))

        o_auth_client = cls(
            client_id=client_id,
            id=id,
            inserted_at=inserted_at,
            name=name,
            published=published,
            redirect_uris=redirect_uris,
            updated_at=updated_at,
            published_at=published_at,
        )

        o_auth_client.additional_properties = d
        return o_auth_client

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
