from enum import StrEnum


class PermissionPolicyAdditionalProperty(StrEnum):
    ASK = "ask"
    AUTO_ALLOW = "auto_allow"
    AUTO_DENY = "auto_deny"

    def __str__(self) -> str:
        return str(self.value)
