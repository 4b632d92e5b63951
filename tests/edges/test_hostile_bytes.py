"""Hostile bytes against `nb-agents serve`: refused with 400 before anything runs or is stored.

Each case is a body that parses and validates as a wire value but that a store
could not write (too deep for the encoder, a lone surrogate, an id no index
takes). Before the fix such a body ran the tool and then failed in the final
write, or committed a row that could never be read back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import ledger
from .served import Served

SURROGATE = "\\ud800"  # as JSON text: the escape of a lone surrogate


def nested(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


def message_body(text: str = "hi", extra: str = "") -> str:
    return '{"data":{"message":{"role":"user","content":[{"text":"' + text + '"' + extra + '}]}},"init":{}}'


def post(server: Served, path: str, body: str | bytes) -> httpx.Response:
    raw = body.encode() if isinstance(body, str) else body
    return httpx.post(
        server.url + path, content=raw, headers={"content-type": "application/json"}, timeout=10
    )


def pause(server: Served, session: str = "acct") -> dict[str, Any]:
    body = {
        "data": {"message": {"role": "user", "content": [{"text": "send 500"}]}},
        "init": {"sessionId": session},
    }
    res = httpx.post(server.url + "/bank", json=body, timeout=10)
    assert res.status_code == 200, res.text
    out = res.json()["result"]
    assert out["finishReason"] == "interrupted"
    return out


def hostile_requests(paused: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(path, body, what the 400 must say) for every hostile shape."""
    snap = paused["snapshotId"]
    ref = paused["message"]["content"][0]["toolRequest"]["ref"]
    restart = (
        '{"toolRequest":{"name":"transfer","ref":"' + ref + '","input":{"amount":500}},"metadata":{"resumed":'
    )
    resume_init = '"init":{"snapshotId":"' + snap + '"}'
    cases = [
        ("/bank", message_body(extra=',"data":' + nested(300)), "nested more than 64 levels"),
        ("/bank", message_body(extra=',"data":' + nested(1000)), "nested"),
        (
            "/bank",
            '{"data":{"resume":{"restart":[' + restart + nested(300) + "}}]}}," + resume_init + "}",
            "nested",
        ),
        ("/bank", message_body(text="a" + SURROGATE + "b"), "lone surrogate"),
        ("/bank", message_body(extra=',"metadata":{"' + SURROGATE + '":1}'), "lone surrogate"),
        ("/bank", message_body(extra=',"custom":{"k":"' + SURROGATE + '"}'), "lone surrogate"),
        (
            "/bank",
            '{"data":{"resume":{"restart":['
            + restart
            + '{"toolApproved":true,"note":"'
            + SURROGATE
            + '"}}}]}},'
            + resume_init
            + "}",
            "lone surrogate",
        ),
        (
            "/bank",
            '{"data":{"resume":{"respond":[],"metadata":"' + SURROGATE + '"}},' + resume_init + "}",
            "lone surrogate",
        ),
        ("/bank", message_body()[:-3] + '{"sessionId":"x' + SURROGATE + '"}}', "U+D800"),
        ("/bank", message_body()[:-3] + '{"sessionId":"' + "s" * 3000 + '"}}', "at most 256 characters"),
        ("/bank", message_body()[:-3] + '{"sessionId":"a\\u0000b"}}', "U+0000"),
        ("/bank", message_body()[:-3] + '{"snapshotId":"' + "s" * 3000 + '"}}', "at most 256 characters"),
        ("/bank", message_body()[:-3] + '{"snapshotId":"a\\u0000b"}}', "U+0000"),
        ("/bank", message_body()[:-3] + '{"snapshotId":"' + SURROGATE + '"}}', "U+D800"),
        ("/bank/getSnapshot", '{"data":{"sessionId":"a\\u0000"}}', "U+0000"),
        ("/bank/getSnapshot", '{"data":{"snapshotId":"' + "s" * 3000 + '"}}', "at most 256"),
        ("/bank/getSnapshot", '{"data":{"sessionId":"' + SURROGATE + '"}}', "U+D800"),
        ("/bank/abort", '{"data":{"snapshotId":"a\\u0000"}}', "U+0000"),
        ("/bank/abort", '{"data":{"snapshotId":"' + SURROGATE + '"}}', "U+D800"),
    ]
    return cases


@pytest.mark.parametrize("streaming", [False, True], ids=["json", "sse"])
def test_hostile_bodies_are_400_before_anything_runs(
    serve: Any, store_kind: str, tmp_path: Path, streaming: bool
) -> None:
    server = serve(store_kind)
    paused = pause(server)
    before = httpx.post(
        server.url + "/bank/getSnapshot", json={"data": {"sessionId": "acct"}}, timeout=10
    ).json()
    for path, body, says in hostile_requests(paused):
        query = "?stream=true" if streaming and path == "/bank" else ""
        res = post(server, path + query, body)
        assert res.status_code == 400, (path, body[:120], res.status_code, res.text[:300])
        err = res.json()
        assert err["status"] == "INVALID_ARGUMENT" and says in err["message"], (body[:120], err)
    assert ledger(tmp_path) == []  # no tool ran
    # the session is untouched, readable, and its interrupt answerable
    after = httpx.post(server.url + "/bank/getSnapshot", json={"data": {"sessionId": "acct"}}, timeout=10)
    assert after.status_code == 200 and after.json() == before
    ref = paused["message"]["content"][0]["toolRequest"]["ref"]
    restart = {
        "toolRequest": {"name": "transfer", "ref": ref, "input": {"amount": 500}},
        "metadata": {"resumed": True},
    }
    body = {"data": {"resume": {"restart": [restart]}}, "init": {"snapshotId": paused["snapshotId"]}}
    done = httpx.post(server.url + "/bank", json=body, timeout=10)
    assert done.status_code == 200 and done.json()["result"]["finishReason"] == "stop", done.text
    assert len(ledger(tmp_path)) == 1
