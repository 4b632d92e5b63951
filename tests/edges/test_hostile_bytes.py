"""Hostile bytes against `nb-agents serve`: refused with 400 before anything runs or is stored.

Each case is a body that parses (Python's ``json`` takes ``NaN`` and ``Infinity``)
and validates as a wire value but that a store could not write or a client could
not read back: nested too deep for the encoder, a lone surrogate, a NUL, an id no
index takes, ``NaN``/``Infinity``/``1e400``, an integer of 5000 digits, or keys the
route does not take. Before the fixes such a body ran the tool and then failed in
the final write, committed a row that could never be read back, wrote ``NaN``
tokens into the audit trail, was answered 500 (the 5000 digits), or was taken
with its unknown keys silently dropped. The rows the store holds, read from its
SQLite file, PostgreSQL tables or files directly, are the same bytes after.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
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


def stored_rows(server: Served) -> dict[str, Any] | None:
    """Every row the server's store holds, read from its file, tables or files directly
    (None for the in-memory store, which only its process can read)."""
    url = server.store_url or ""
    if url.startswith("sqlite:///"):
        uri = f"file:{url[len('sqlite:///') :]}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True)) as db:
            names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            return {t: sorted(db.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr) for t in names}
    if url.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(url) as conn:
            names = [
                r[0]
                for r in conn.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
                )
            ]
            return {t: sorted(r[0] for r in conn.execute(f'SELECT t::text FROM "{t}" t')) for t in names}
    if url.startswith("file://"):
        root = Path(url[len("file://") :])
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    return None


HUGE = "9" * 5000  # more digits than Python's int() converts (4300): a 500 before


def hostile_numbers_and_keys(paused: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(path, body, what the 400 must say): numbers that are not JSON, keys no route takes."""
    snap = paused["snapshotId"]
    ref = paused["message"]["content"][0]["toolRequest"]["ref"]
    resume_init = '"init":{"snapshotId":"' + snap + '"}'

    def restart(amount: str = "500", resumed: str = '{"toolApproved":true}', more: str = "") -> str:
        part = (
            '{"toolRequest":{"name":"transfer","ref":"' + ref + '","input":{"amount":' + amount + "}},"
            '"metadata":{"resumed":' + resumed + "}}"
        )
        return '{"data":{"resume":{"restart":[' + part + "]" + more + "}}," + resume_init + "}"

    def respond(output: str) -> str:
        part = '{"toolResponse":{"name":"transfer","ref":"' + ref + '","output":' + output + "}}"
        return '{"data":{"resume":{"respond":[' + part + "]}}," + resume_init + "}"

    at = "data.resume.restart[0]"
    config = message_body()[:-1] + ',"config":{"temperature":'
    return [
        ("/bank", restart(resumed='{"toolApproved":true,"note":NaN}'), f"{at}.metadata.resumed.note is NaN"),
        ("/bank", respond('{"amount":NaN}'), "data.resume.respond[0].toolResponse.output.amount is NaN"),
        ("/bank", respond("Infinity"), "data.resume.respond[0].toolResponse.output is Infinity"),
        ("/bank", restart(amount="1e400"), f"{at}.toolRequest.input.amount is Infinity"),
        ("/bank", restart(amount="-Infinity"), f"{at}.toolRequest.input.amount is -Infinity"),
        ("/bank", restart(amount=HUGE), f"{at}.toolRequest.input.amount is an integer beyond"),
        ("/bank", restart(amount="-" + "9" * 400), f"{at}.toolRequest.input.amount is an integer beyond"),
        (
            "/bank",
            message_body(extra=',"metadata":{"n":' + HUGE + "}"),
            "content[0].metadata.n is an integer",
        ),
        ("/bank", config + "NaN}}", "config.temperature is NaN"),
        ("/bank", config + HUGE + "}}", "config.temperature is an integer beyond"),
        ("/bank", message_body()[:-3] + '{"sessionId":"acct","n":' + HUGE + "}}", "init.n is an integer"),
        ("/bank/rules", '{"data":{"sessionId":"acct","n":' + HUGE + "}}", "data.n is an integer beyond"),
        ("/bank/revokeRule", '{"data":{"sessionId":"acct","ruleId":' + HUGE + "}}", "data.ruleId is an"),
        ("/bank/getSnapshot", '{"data":{"sessionId":"acct","n":NaN}}', "data.n is NaN"),
        ("/bank/abort", '{"data":{"snapshotId":"' + snap + '","n":1e400}}', "data.n is Infinity"),
        # NUL in any string or key: PostgreSQL keeps neither, so no store takes them
        ("/bank", message_body(text="a\\u0000b"), "data.message.content[0].text holds U+0000"),
        ("/bank", message_body(extra=',"metadata":{"k\\u0000":1}'), "holds U+0000"),
        ("/bank", restart(resumed='{"toolApproved":true,"note":"\\u0000"}'), f"{at}.metadata.resumed.note"),
        # unknown keys where the route knows every key: a misspelled answer is not dropped
        ("/bank", restart(more=',"respnd":[]'), "unknown field(s) data.resume.respnd"),
        (
            "/bank",
            message_body()[:-12] + ',"sessionID":"acct"},"init":{}}',
            "unknown field(s) data.sessionID",
        ),
        ("/bank", message_body()[:-3] + '{"sessionId":"acct","snapshotID":"x"}}', "init.snapshotID"),
        ("/bank/getSnapshot", '{"data":{"sessionId":"acct","snapshotID":"x"}}', "data.snapshotID"),
        ("/bank/abort", '{"data":{"snapshotId":"' + snap + '","force":true}}', "data.force"),
        ("/bank/rules", '{"data":{"sessionId":"acct","all":true}}', "unknown field(s) data.all"),
        ("/bank/revokeRule", '{"data":{"sessionId":"acct","ruleId":"r","why":1}}', "data.why"),
    ]


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
    return cases + hostile_numbers_and_keys(paused)


@pytest.mark.parametrize("streaming", [False, True], ids=["json", "sse"])
def test_hostile_bodies_are_400_before_anything_runs(
    serve: Any, store_kind: str, tmp_path: Path, streaming: bool
) -> None:
    server = serve(store_kind)
    paused = pause(server)
    before = httpx.post(
        server.url + "/bank/getSnapshot", json={"data": {"sessionId": "acct"}}, timeout=10
    ).json()
    rows = stored_rows(server)
    assert rows is None or any(rows.values())  # the pause is in them
    for path, body, says in hostile_requests(paused):
        query = "?stream=true" if streaming and path == "/bank" else ""
        res = post(server, path + query, body)
        assert res.status_code == 400, (path, body[:120], res.status_code, res.text[:300])
        err = res.json()
        assert err["status"] == "INVALID_ARGUMENT" and says in err["message"], (body[:120], err)
    assert ledger(tmp_path) == []  # no tool ran
    assert stored_rows(server) == rows  # not a byte written
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
