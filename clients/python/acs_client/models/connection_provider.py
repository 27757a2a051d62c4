from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.token_auth_method import TokenAuthMethod
from ..types import UNSET, Unset

T = TypeVar("T", bound="ConnectionProvider")


@_attrs_define
class ConnectionProvider:
    """An OAuth provider an account's people may connect to.

    Attributes:
        client_id (str):
        hosts (list[str]): Host patterns (exact or `*.`-prefixed) its tokens may be sent to.
        id (UUID):
        inserted_at (datetime.datetime):
        name (str):
        scopes (list[str]):
        slug (str): Names the provider in `/connections/{slug}/start`; unique per account.
        token_endpoint_auth_method (TokenAuthMethod): How the client authenticates at the token endpoint.
        updated_at (datetime.datetime):
        authorization_endpoint (None | str | Unset):
        issuer (None | str | Unset):
        revocation_endpoint (None | str | Unset): Where a deleted connection's token is revoked (filled by discovery).
        token_endpoint (None | str | Unset):
    """

    client_id: str
    hosts: list[str]
    id: UUID
    inserted_at: datetime.datetime
    name: str
    scopes: list[str]
    slug: str
    token_endpoint_auth_method: TokenAuthMethod
    updated_at: datetime.datetime
    authorization_endpoint: None | str | Unset = UNSET
    issuer: None | str | Unset = UNSET
    revocation_endpoint: None | str | Unset = UNSET
    token_endpoint: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        client_id = self.client_id

        hosts = self.hosts

        id = str(self.id)

        inserted_at = self.inserted_at.isoformat()

        name = self.name

        scopes = self.scopes

        slug = self.slug

        token_endpoint_auth_method = self.token_endpoint_auth_method.value

        updated_at = self.updated_at.isoformat()

        authorization_endpoint: None | str | Unset
        if isinstance(self.authorization_endpoint, Unset):
            authorization_endpoint = UNSET
        else:
            authorization_endpoint = self.authorization_endpoint

        issuer: None | str | Unset
        if isinstance(self.issuer, Unset):
            issuer = UNSET
        else:
            issuer = self.issuer

        revocation_endpoint: None | str | Unset
        if isinstance(self.revocation_endpoint, Unset):
            revocation_endpoint = UNSET
        else:
            revocation_endpoint = self.revocation_endpoint

        token_endpoint: None | str | Unset
        if isinstance(self.token_endpoint, Unset):
            token_endpoint = UNSET
        else:
            token_endpoint = self.token_endpoint

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "client_id": client_id,
                "hosts": hosts,
                "id": id,
                "inserted_at": inserted_at,
                "name": name,
                "scopes": scopes,
                "slug": slug,
                "token_endpoint_auth_method": token_endpoint_auth_method,
                "updated_at": updated_at,
            }
        )
        if authorization_endpoint is not UNSET:
            field_dict["authorization_endpoint"] = authorization_endpoint
        if issuer is not UNSET:
            field_dict["issuer"] = issuer
        if revocation_endpoint is not UNSET:
            field_dict["revocation_endpoint"] = revocation_endpoint
        if token_endpoint is not UNSET:
            field_dict["token_endpoint"] = token_endpoint

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        client_id = d.pop("client_id")

        hosts = cast(list[str], d.pop("hosts"))

        id = UUID(d.pop("id"))

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        name = d.pop("name")

        scopes = cast(list[str], d.pop("scopes"))

        slug = d.pop("slug")

        token_endpoint_auth_method = TokenAuthMethod(d.pop("token_endpoint_auth_method"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_authorization_endpoint(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        authorization_endpoint = _parse_authorization_endpoint(d.pop("authorization_endpoint", UNSET))

        def _parse_issuer(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        issuer = _parse_issuer(d.pop("issuer", UNSET))

        def _parse_revocation_endpoint(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        revocation_endpoint = _parse_revocation_endpoint(d.pop("revocation_endpoint", UNSET))

        def _parse_token_endpoint(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        token_endpoint = _parse_token_endpoint(d.pop("token_endpoint", UNSET))

        connection_provider = cls(
            client_id=client_id,
            hosts=hosts,
            id=id,
            inserted_at=inserted_at,
            name=name,
            scopes=scopes,
            slug=slug,
            token_endpoint_auth_method=token_endpoint_auth_method,
            updated_at=updated_at,
            authorization_endpoint=authorization_endpoint,
            issuer=issuer,
            revocation_endpoint=revocation_endpoint,
            token_endpoint=token_endpoint,
        )

        connection_provider.additional_properties = d
        return connection_provider

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
