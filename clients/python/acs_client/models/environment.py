from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.networking_type import NetworkingType

if TYPE_CHECKING:
    from ..models.environment_env_vars import EnvironmentEnvVars
    from ..models.environment_metadata import EnvironmentMetadata
    from ..models.environment_packages import EnvironmentPackages
    from ..models.networking_config import NetworkingConfig
    from ..models.repository import Repository


T = TypeVar("T", bound="Environment")


@_attrs_define
class Environment:
    """An environment as read back.

    Attributes:
        build_fingerprint (str): Hex SHA-256 of packages, repositories, setup script and network policy.
        env_vars (EnvironmentEnvVars):
        fingerprint_at (datetime.datetime): When `build_fingerprint` last changed.
        id (UUID):
        inserted_at (datetime.datetime):
        metadata (EnvironmentMetadata):
        name (str):
        networking_config (NetworkingConfig): Network policy details; only `allowed_hosts` is honoured and any other key
            is refused.
        networking_type (NetworkingType):
        packages (EnvironmentPackages):
        repositories (list[Repository]):
        setup_script (str):
        setup_timeout_seconds (int):
        updated_at (datetime.datetime):
    """

    build_fingerprint: str
    env_vars: EnvironmentEnvVars
    fingerprint_at: datetime.datetime
    id: UUID
    inserted_at: datetime.datetime
    metadata: EnvironmentMetadata
    name: str
    networking_config: NetworkingConfig
    networking_type: NetworkingType
    packages: EnvironmentPackages
    repositories: list[Repository]
    setup_script: str
    setup_timeout_seconds: int
    updated_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        build_fingerprint = self.build_fingerprint

        env_vars = self.env_vars.to_dict()

        fingerprint_at = self.fingerprint_at.isoformat()

        id = str(self.id)

        inserted_at = self.inserted_at.isoformat()

        metadata = self.metadata.to_dict()

        name = self.name

        networking_config = self.networking_config.to_dict()

        networking_type = self.networking_type.value

        packages = self.packages.to_dict()

        repositories = []
        for repositories_item_data in self.repositories:
            repositories_item = repositories_item_data.to_dict()
            repositories.append(repositories_item)

        setup_script = self.setup_script

        setup_timeout_seconds = self.setup_timeout_seconds

        updated_at = self.updated_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "build_fingerprint": build_fingerprint,
                "env_vars": env_vars,
                "fingerprint_at": fingerprint_at,
                "id": id,
                "inserted_at": inserted_at,
                "metadata": metadata,
                "name": name,
                "networking_config": networking_config,
                "networking_type": networking_type,
                "packages": packages,
                "repositories": repositories,
                "setup_script": setup_script,
                "setup_timeout_seconds": setup_timeout_seconds,
                "updated_at": updated_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.environment_env_vars import EnvironmentEnvVars  # noqa: PLC0415
        from ..models.environment_metadata import EnvironmentMetadata  # noqa: PLC0415
        from ..models.environment_packages import EnvironmentPackages  # noqa: PLC0415
        from ..models.networking_config import NetworkingConfig  # noqa: PLC0415
        from ..models.repository import Repository  # noqa: PLC0415

        d = dict(src_dict)
        build_fingerprint = d.pop("build_fingerprint")

        env_vars = EnvironmentEnvVars.from_dict(d.pop("env_vars"))

        fingerprint_at = datetime.datetime.fromisoformat(d.pop("fingerprint_at"))

        id = UUID(d.pop("id"))

        inserted_at = datetime.datetime.fromisoformat(d.pop("inserted_at"))

        metadata = EnvironmentMetadata.from_dict(d.pop("metadata"))

        name = d.pop("name")

        networking_config = NetworkingConfig.from_dict(d.pop("networking_config"))

        networking_type = NetworkingType(d.pop("networking_type"))

        packages = EnvironmentPackages.from_dict(d.pop("packages"))

        repositories = []
        _repositories = d.pop("repositories")
        for repositories_item_data in _repositories:
            repositories_item = Repository.from_dict(repositories_item_data)

            repositories.append(repositories_item)

        setup_script = d.pop("setup_script")

        setup_timeout_seconds = d.pop("setup_timeout_seconds")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        environment = cls(
            build_fingerprint=build_fingerprint,
            env_vars=env_vars,
            fingerprint_at=fingerprint_at,
            id=id,
            inserted_at=inserted_at,
            metadata=metadata,
            name=name,
            networking_config=networking_config,
            networking_type=networking_type,
            packages=packages,
            repositories=repositories,
            setup_script=setup_script,
            setup_timeout_seconds=setup_timeout_seconds,
            updated_at=updated_at,
        )

        environment.additional_properties = d
        return environment

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
