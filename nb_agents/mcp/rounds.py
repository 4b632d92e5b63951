"""The 2026-07-28 "input required" round trip: a server's questions as pauses that outlive the process.

A server that speaks the 2026-07-28 revision never asks in the middle of a
call. Its ``tools/call`` *returns* an ``InputRequiredResult``: the questions,
keyed by names the server chose, and an opaque ``requestState``. The client
calls the same tool again with the same arguments, the answers under the same
keys and the state echoed back. Nothing stays open in between, so the pause
is durable: everything the retry needs is in the pause data, stored with the
turn like any interrupt::

    {"message": "...", "mcp": {"server": ..., "tool": ..., "elicitation": {...},
                               "inputRequired": {"key": "<the question asked now>",
                                                 "requestState": "<the server's state>"}}}

and, only when there are any: ``requests`` (the result's other questions, key
-> elicitation params), ``answers`` (key -> ``ElicitResult``, given so far in
this round) and ``given`` (every answer of the call, ``[{question, answer}]``).

An answer (a restart of the same call, as for any elicitation) is read against
that stored data, never against what the caller sends, and can come from any
process: after a kernel restart, from ``agent.pending()``, over HTTP. With
several questions in one result the turn pauses on each in turn, and the
retry goes out once all are answered.

When the server refuses the state (the SDK's default lets a round wait ten
minutes, and a server that restarted without a shared key cannot read it),
the call runs again from its first round, and a question asked again that is
the same question (same message and schema) gets the answer already given; a
different question pauses the turn. The protocol allows it: a 2026-era server
runs the tool again at every round anyway. `Supply` carries those answers,
every answer of the call so far (``given``), since the earlier rounds' answers
may live only in the state the server refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .elicitation import elicitation_pause

__all__ = [
    "MAX_AUTOMATIC_ROUNDS",
    "Retry",
    "Round",
    "Supply",
    "fingerprint",
    "questions_of",
    "state_refused",
]

MAX_AUTOMATIC_ROUNDS = 10
"""Rounds in a row without a person (answers supplied, state-only waits) before a call fails."""


def fingerprint(params: dict[str, Any]) -> str:
    """What makes two elicitation requests the same question: message, mode, schema or URL."""
    keep = {k: params.get(k) for k in ("message", "mode", "requestedSchema", "url")}
    keep["mode"] = keep["mode"] or "form"
    return json.dumps(keep, sort_keys=True, ensure_ascii=False, default=str)


def questions_of(result: Any) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """An ``InputRequiredResult``'s elicitation requests (key -> params, as JSON), and the
    methods of any other requests (sampling, roots: nb_agents answers neither)."""
    asks: dict[str, dict[str, Any]] = {}
    other: list[str] = []
    for key, request in (getattr(result, "input_requests", None) or {}).items():
        method = str(getattr(request, "method", ""))
        if method == "elicitation/create":
            asks[str(key)] = request.params.model_dump(mode="json", by_alias=True, exclude_none=True)
        else:
            other.append(method or type(request).__name__)
    return asks, other


def state_refused(error: BaseException) -> bool:
    """Whether the server refused the ``requestState`` sent back (expired, or sealed by a key
    it does not have): JSON-RPC ``-32602`` naming it."""
    code = getattr(error, "code", None)
    text = f"{getattr(error, 'message', '')} {getattr(error, 'data', '')}".lower()
    return code == -32602 and ("requeststate" in text or "request_state" in text)


@dataclass(slots=True)
class Retry:
    """The next leg of a call: the answers, under the server's keys, and its state."""

    responses: dict[str, dict[str, Any]]
    request_state: str | None


@dataclass(slots=True)
class Supply:
    """Answers a person already gave in a call, by question (`fingerprint`), for the
    call run again."""

    given: list[dict[str, Any]] = field(default_factory=list)  # {"question": ..., "answer": ...}

    def add(self, question: dict[str, Any], answer: dict[str, Any]) -> None:
        mark = fingerprint(question)
        self.given = [g for g in self.given if fingerprint(g["question"]) != mark]
        self.given.append({"question": question, "answer": answer})

    def get(self, question: dict[str, Any]) -> dict[str, Any] | None:
        mark = fingerprint(question)
        return next((g["answer"] for g in self.given if fingerprint(g["question"]) == mark), None)

    @classmethod
    def from_json(cls, value: Any) -> Supply:
        given = value if isinstance(value, list) else []
        return cls(
            [
                {"question": g["question"], "answer": g["answer"]}
                for g in given
                if isinstance(g, dict)
                and isinstance(g.get("question"), dict)
                and isinstance(g.get("answer"), dict)
            ]
        )


@dataclass(slots=True)
class Round:
    """One ``InputRequiredResult`` being answered: its questions, the answers so far, its state."""

    request_state: str | None
    requests: dict[str, dict[str, Any]]
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    supply: Supply = field(default_factory=Supply)  # every answer of the call so far

    @classmethod
    def from_pause(cls, data: Any) -> tuple[Round, str] | None:
        """The round stored in a pause's data, with the key of the question it asks; or None
        when the pause is not a 2026-07-28 question (a held call, a 2025-era question)."""
        mcp = data.get("mcp") if isinstance(data, dict) else None
        stored = mcp.get("inputRequired") if isinstance(mcp, dict) else None
        if not isinstance(stored, dict) or not isinstance(stored.get("key"), str):
            return None
        assert isinstance(data, dict) and isinstance(mcp, dict)
        key, state = stored["key"], stored.get("requestState")
        others, answers = stored.get("requests"), stored.get("answers")
        asked = mcp.get("elicitation")
        asked = asked if isinstance(asked, dict) else {}
        requests = {key: {"message": data.get("message"), **asked}}  # the question, as it was sent
        requests.update({k: v for k, v in (others or {}).items() if isinstance(v, dict) and k != key})
        round_ = cls(
            state if isinstance(state, str) else None,
            requests,
            dict(answers) if isinstance(answers, dict) else {},
            Supply.from_json(stored.get("given")),
        )
        return round_, key

    def answer(self, key: str, answer: dict[str, Any]) -> None:
        """Record the person's answer to question `key`."""
        self.answers[key] = answer
        if key in self.requests:
            self.supply.add(self.requests[key], answer)

    def fill(self) -> None:
        """Answer every question the call was already given an answer to."""
        for key, params in self.requests.items():
            given = self.supply.get(params)
            if key not in self.answers and given is not None:
                self.answers[key] = given

    def open_key(self) -> str | None:
        """The first question not answered yet."""
        return next((k for k in self.requests if k not in self.answers), None)

    def pause(self, server: str, tool: str) -> dict[str, Any]:
        """The pause data that asks the first open question (see the module docstring)."""
        key = self.open_key()
        assert key is not None
        data = elicitation_pause(server, tool, self.requests[key])
        stored: dict[str, Any] = {"key": key, "requestState": self.request_state}
        others = {k: v for k, v in self.requests.items() if k != key}
        for name, value in (("requests", others), ("answers", self.answers), ("given", self.supply.given)):
            if value:
                stored[name] = value
        data["mcp"]["inputRequired"] = stored
        return data

    def retry(self) -> Retry:
        """The next leg, once every question has its answer."""
        return Retry(dict(self.answers), self.request_state)
