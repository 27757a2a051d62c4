from enum import StrEnum


class AttemptError(StrEnum):
    ADDRESS_REFUSED = "address_refused"
    CONNECT_FAILED = "connect_failed"
    DNS_FAILED = "dns_failed"
    REQUEST_FAILED = "request_failed"
    TIMEOUT = "timeout"

    def __str__(self) -> str:
        return str(self.value)
