from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.networking_type import NetworkingType
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.environment_create_env_vars_type_0 import EnvironmentCreateEnvVarsType0
    from ..models.environment_create_metadata_type_0 import EnvironmentCreateMetadataType0
    from ..models.environment_create_packages_type_0 import EnvironmentCreatePackagesType0
    from ..models.networking_config import NetworkingConfig
    from ..models.repository import Repository


T = TypeVar("T", bound="EnvironmentCreate")


@_attrs_define
class EnvironmentCreate:
    """Body of create: `name` is required; the rest as in an update.

    Attributes:
        name (str): 1 to 200 characters; required on create.
        env_vars (EnvironmentCreateEnvVarsType0 | None | Unset): Variable names `[A-Za-z_][A-Za-z0-9_]*` (max 256);
            values max 32 KB.
        metadata (EnvironmentCreateMetadataType0 | None | Unset):
        networking_config (NetworkingConfig | None | Unset):
        networking_type (NetworkingType | None | Unset):
        packages (EnvironmentCreatePackagesType0 | None | Unset):
        repositories (list[Repository] | None | Unset):
        setup_script (None | str | Unset): Run with `bash -e` in `/workspace`; max 256 KB.
        setup_timeout_seconds (int | None | Unset): 1 to 900 (default 120).
    """

    name: str
    env_vars: EnvironmentCreateEnvVarsType0 | None | Unset = UNSET
    metadata: EnvironmentCreateMetadataType0 | None | Unset = UNSET
    networking_config: NetworkingConfig | None | Unset = UNSET
    networking_type: NetworkingType | None | Unset = UNSET
    packages: EnvironmentCreatePackagesType0 | None | Unset = UNSET
    repositories: list[Repository] | None | Unset = UNSET
    setup_script: None | str | Unset = UNSET
    setup_timeout_seconds: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.environment_create_env_vars_type_0 import EnvironmentCreateEnvVarsType0  # noqa: PLC0415
        from ..models.environment_create_metadata_type_0 import EnvironmentCreateMetadataType0  # noqa: PLC0415
        from ..models.environment_create_packages_type_0 import EnvironmentCreatePackagesType0  # noqa: PLC0415
        from ..models.networking_config import NetworkingConfig  # noqa: PLC0415

        name = self.name

        env_vars: dict[str, Any] | None | Unset
        if isinstance(self.env_vars, Unset):
            env_vars = UNSET
        elif isinstance(self.env_vars, EnvironmentCreateEnvVarsType0):
            env_vars = self.env_vars.to_dict()
        else:
            env_vars = self.env_vars

        metadata: dict[str, Any] | None | Unset
        if isinstance(self.metadata, Unset):
            metadata = UNSET
        elif isinstance(self.metadata, EnvironmentCreateMetadataType0):
            metadata = self.metadata.to_dict()
        else:
            metadata = self.metadata

        networking_config: dict[str, Any] | None | Unset
        if isinstance(self.networking_config, Unset):
            networking_config = UNSET
        elif isinstance(self.networking_config, NetworkingConfig):
            networking_config = self.networking_config.to_dict()
        else:
            networking_config = self.networking_config

        networking_type: None | str | Unset
        if isinstance(self.networking_type, Unset):
            networking_type = UNSET
        elif isinstance(self.networking_type, NetworkingType):
            networking_type = self.networking_type.value
        else:
            networking_type = self.networking_type

        packages: dict[str, Any] | None | Unset
        if isinstance(self.packages, Unset):
            packages = UNSET
        elif isinstance(self.packages, EnvironmentCreatePackagesType0):
            packages = self.packages.to_dict()
        else:
            packages = self.packages

        repositories: list[dict[str, Any]] | None | Unset
        if isinstance(self.repositories, Unset):
            repositories = UNSET
        elif isinstance(self.repositories, list):
            repositories = []
            for repositories_type_0_item_data in self.repositories:
                repositories_type_0_item = repositories_type_0_item_data.to_dict()
                repositories.append(repositories_type_0_item)

        else:
            repositories = self.repositories

        setup_script: None | str | Unset
        if isinstance(self.setup_script, Unset):
            setup_script = UNSET
        else:
            setup_script = self.setup_script

        setup_timeout_seconds: int | None | Unset
        if isinstance(self.setup_timeout_seconds, Unset):
            setup_timeout_seconds = UNSET
        else:
            setup_timeout_seconds = self.setup_timeout_seconds

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
            }
        )
        if env_vars is not UNSET:
            field_dict["env_vars"] = env_vars
        if metadata is not UNSET:
            field_dict["metadata"] = metadata
        if networking_config is not UNSET:
            field_dict["networking_config"] = networking_config
        if networking_type is not UNSET:
            field_dict["networking_type"] = networking_type
        if packages is not UNSET:
            field_dict["packages"] = packages
        if repositories is not UNSET:
            field_dict["repositories"] = repositories
        if setup_script is not UNSET:
            field_dict["setup_script"] = setup_script
        if setup_timeout_seconds is not UNSET:
            field_dict["setup_timeout_seconds"] = setup_timeout_seconds

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.environment_create_env_vars_type_0 import EnvironmentCreateEnvVarsType0  # noqa: PLC0415
        from ..models.environment_create_metadata_type_0 import EnvironmentCreateMetadataType0  # noqa: PLC0415
        from ..models.environment_create_packages_type_0 import EnvironmentCreatePackagesType0  # noqa: PLC0415
        from ..models.networking_config import NetworkingConfig  # noqa: PLC0415
        from ..models.repository import Repository  # noqa: PLC0415

        d = dict(src_dict)
        name = d.pop("name")

        def _parse_env_vars(data: object) -> EnvironmentCreateEnvVarsType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                env_vars_type_0 = EnvironmentCreateEnvVarsType0.from_dict(data)

                return env_vars_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EnvironmentCreateEnvVarsType0 | None | Unset, data)

        env_vars = _parse_env_vars(d.pop("env_vars", UNSET))

        def _parse_metadata(data: object) -> EnvironmentCreateMetadataType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = EnvironmentCreateMetadataType0.from_dict(data)

                return metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EnvironmentCreateMetadataType0 | None | Unset, data)

        metadata = _parse_metadata(d.pop("metadata", UNSET))

        def _parse_networking_config(data: object) -> NetworkingConfig | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                networking_config_type_0 = NetworkingConfig.from_dict(data)

                return networking_config_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(NetworkingConfig | None | Unset, data)

        networking_config = _parse_networking_config(d.pop("networking_config", UNSET))

        def _parse_networking_type(data: object) -> NetworkingType | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                networking_type_type_0 = NetworkingType(data)

                return networking_type_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(NetworkingType | None | Unset, data)

        networking_type = _parse_networking_type(d.pop("networking_type", UNSET))

        def _parse_packages(data: object) -> EnvironmentCreatePackagesType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                packages_type_0 = EnvironmentCreatePackagesType0.from_dict(data)

                return packages_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EnvironmentCreatePackagesType0 | None | Unset, data)

        packages = _parse_packages(d.pop("packages", UNSET))

        def _parse_repositories(data: object) -> list[Repository] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                repositories_type_0 = []
                _repositories_type_0 = data
                for repositories_type_0_item_data in _repositories_type_0:
                    repositories_type_0_item = Repository.from_dict(repositories_type_0_item_data)

                    repositories_type_0.append(repositories_type_0_item)

                return repositories_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[Repository] | None | Unset, data)

        repositories = _parse_repositories(d.pop("repositories", UNSET))

        def _parse_setup_script(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        setup_script = _parse_setup_script(d.pop("setup_script", UNSET))

        def _parse_setup_timeout_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        setup_timeout_seconds = _parse_setup_timeout_seconds(d.pop("setup_timeout_seconds", UNSET))

        environment_create = cls(
            name=name,
            env_vars=env_vars,
            metadata=metadata,
            networking_config=networking_config,
            networking_type=networking_type,
            packages=packages,
            repositories=repositories,
            setup_script=setup_script,
            setup_timeout_seconds=setup_timeout_seconds,
        )

        environment_create.additional_properties = d
        return environment_create

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
