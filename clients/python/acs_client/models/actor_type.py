from enum import StrEnum


class ActorType(StrEnum):
    ACCOUNT = "account"
    API_KEY = "api_key"
    SERVICE = "service"

    def __str__(self) -> str:
        return str(self.value)
