"""The errors a model provider call can raise, and how HTTP answers map onto them.

Every class sits under `ModelError`, itself a branch of the project's one
error tree (drawn in `nb_agents.errors`), so a failed model call fails the turn
in-band (finish reason ``failed``) with a Genkit status a client can act on::

    NbAgentsError
    └── ModelError                   a provider call failed (status from the kind)
        ├── AuthenticationError      UNAUTHENTICATED: 401 (or Google's API_KEY_INVALID)
        │   └── MissingApiKeyError   UNAUTHENTICATED: no key configured (names the variable)
        ├── ModelPermissionDeniedError  PERMISSION_DENIED: 403
        ├── BadRequestError          INVALID_ARGUMENT: 400, 413, 422 (the request was wrong)
        ├── ModelNotFoundError       NOT_FOUND: 404, an unknown model or endpoint
        ├── RateLimitError           RESOURCE_EXHAUSTED: 429 (retried)
        ├── OverloadedError          UNAVAILABLE: 503, 529, "overloaded" (retried)
        ├── ModelServerError         INTERNAL: 500 and other 5xx (retried)
        ├── ModelConnectionError     UNAVAILABLE: the server could not be reached (retried)
        ├── ModelTimeoutError        DEADLINE_EXCEEDED: no answer in time
        └── ModelResponseError       INTERNAL: an answer we could not read

The message is the provider's own (``error.message`` from the body) prefixed
with the provider name; ``details`` holds the HTTP status, the provider's error
type and the raw body, so nothing the provider said is lost.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..errors import NbAgentsError

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "MissingApiKeyError",
    "ModelConnectionError",
    "ModelError",
    "ModelNotFoundError",
    "ModelPermissionDeniedError",
    "ModelResponseError",
    "ModelServerError",
    "ModelTimeoutError",
    "OverloadedError",
    "RateLimitError",
    "error_for_http_status",
]


class ModelError(NbAgentsError):
    """A call to a model provider failed.

    Attributes:
        provider: ``"openai"``, ``"googleai"``, ``"anthropic"``, ...
        http_status: The HTTP status of the provider's answer, if there was one.
        retryable: Whether trying again later may succeed.
        retry_after: Seconds the provider asked us to wait (``Retry-After``), if it said.

    Example:
        >>> err = RateLimitError("slow down", provider="openai", http_status=429)
        >>> (err.status, err.retryable, str(err))
        ('RESOURCE_EXHAUSTED', True, 'RESOURCE_EXHAUSTED: openai: slow down')
    """

    status = "UNKNOWN"
    retryable = False
    retry_after: float | None = None

    def __init__(
        self,
        message: str,
        *,
        provider: str = "model",
        http_status: int | None = None,
        details: Any = None,
        status: str | None = None,
    ) -> None:
        super().__init__(f"{provider}: {message}", status=status, details=details)
        self.provider = provider
        self.http_status = http_status


class AuthenticationError(ModelError):
    """The provider rejected the API key (HTTP 401)."""

    status = "UNAUTHENTICATED"


class MissingApiKeyError(AuthenticationError):
    """No API key was passed and none is set in the environment.

    Raised by a model's first `generate`, before any request is sent, so that
    a missing key fails the turn (status ``UNAUTHENTICATED``) instead of
    crashing the kernel; the message names the variable to set.
    """


class ModelPermissionDeniedError(ModelError):
    """The key is valid but may not use this model or feature (HTTP 403)."""

    status = "PERMISSION_DENIED"


class BadRequestError(ModelError):
    """The provider says the request itself is wrong (HTTP 400, 413, 422)."""

    status = "INVALID_ARGUMENT"


class ModelNotFoundError(ModelError):
    """The model or endpoint does not exist at the provider (HTTP 404)."""

    status = "NOT_FOUND"


class RateLimitError(ModelError):
    """Too many requests or tokens for the account (HTTP 429); retried."""

    status = "RESOURCE_EXHAUSTED"
    retryable = True


class OverloadedError(ModelError):
    """The provider is temporarily overloaded (HTTP 503, 529); retried."""

    status = "UNAVAILABLE"
    retryable = True


class ModelServerError(ModelError):
    """The provider failed internally (HTTP 500 and other 5xx); retried."""

    status = "INTERNAL"
    retryable = True


class ModelConnectionError(ModelError):
    """The provider could not be reached (DNS, refused, reset); retried."""

    status = "UNAVAILABLE"
    retryable = True


class ModelTimeoutError(ModelError):
    """The provider did not answer within the model's ``timeout``."""

    status = "DEADLINE_EXCEEDED"


class ModelResponseError(ModelError):
    """The provider answered with something that is not the documented shape."""

    status = "INTERNAL"


def error_for_http_status(
    http_status: int,
    message: str,
    *,
    provider: str,
    error_type: str | None = None,
    body: Any = None,
) -> ModelError:
    """The `ModelError` for a non-2xx provider answer.

    `error_type` is the provider's own error kind (``"overloaded_error"``,
    ``"rate_limit_error"``, ``"RESOURCE_EXHAUSTED"``, ...); an overloaded kind
    wins over the status code because Anthropic reports overload on 429 too.

    Example:
        >>> type(error_for_http_status(529, "busy", provider="anthropic")).__name__
        'OverloadedError'
    """
    details = {"httpStatus": http_status, "type": error_type, "body": body}
    kind = (error_type or "").lower()
    cls: type[ModelError]
    if "overloaded" in kind:
        cls = OverloadedError
    elif http_status == 401 or kind == "api_key_invalid":  # Google answers a bad key with 400
        cls = AuthenticationError
    elif http_status == 403:
        cls = ModelPermissionDeniedError
    elif http_status == 404:
        cls = ModelNotFoundError
    elif http_status == 429:
        cls = RateLimitError
    elif http_status in (503, 529):
        cls = OverloadedError
    elif http_status == 504:
        cls = ModelTimeoutError
    elif http_status >= 500:
        cls = ModelServerError
    elif http_status == 408:
        cls = ModelTimeoutError
    elif 400 <= http_status < 500:
        cls = BadRequestError
    else:
        cls = ModelResponseError
    return cls(message, provider=provider, http_status=http_status, details=details)


def __getattr__(name: str) -> Any:
    if name == "PermissionDeniedError":
        warnings.warn(
            "nb_agents.models.errors.PermissionDeniedError is now ModelPermissionDeniedError "
            "(nb_agents.PermissionDeniedError is the status class of the whole tree)",
            DeprecationWarning,
            stacklevel=2,
        )
        return ModelPermissionDeniedError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
