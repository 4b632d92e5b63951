"""An answered turn's status line in words: who answered, when, and what each call did.

"Approved by you at 14:02 · transferMoney ran". A turn that paused on several
calls of one tool names each by what sets it apart, so a person can tell which
is which: "payInvoice (Acme) ran, payInvoice (Globex) did not run". A pause
whose deadline passed says what its default did: "Expired at 14:02 ·
transferMoney did not run". Who answered is "you" when the
form's `TurnView` was not told a name (the person at this notebook), else the
name it was given.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from ..render import answer_line, local_time, record_words

if TYPE_CHECKING:
    from .view import TurnView

__all__ = ["call_names", "did", "outcome_line"]

_MAX = 30


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        return None
    text = " ".join(str(value).split())
    return text if len(text) <= _MAX else text[: _MAX - 1] + "…"


def call_names(forms: list[Any]) -> list[str]:
    """Each form's call as a person tells it apart: the tool's name, and, when several forms
    call the same tool, the first argument whose value differs ("payInvoice (Acme)").

    Example:
        >>> from types import SimpleNamespace as NS
        >>> f = lambda v: NS(interrupt=NS(name="payInvoice", input={"vendor": v, "amount": 1}))
        >>> call_names([f("Acme"), f("Globex")])
        ['payInvoice (Acme)', 'payInvoice (Globex)']
    """
    groups: dict[str, list[int]] = defaultdict(list)
    for n, form in enumerate(forms):
        groups[form.interrupt.name].append(n)
    names = [form.interrupt.name for form in forms]
    for name, members in groups.items():
        if len(members) < 2:
            continue
        inputs = [forms[n].interrupt.input for n in members]
        keys = (
            [k for k in inputs[0] if all(isinstance(i, dict) and k in i for i in inputs)]
            if all(isinstance(i, dict) for i in inputs)
            else []
        )
        key = next(
            (
                k
                for k in keys
                if all(_scalar(i[k]) is not None for i in inputs)
                and len({_scalar(i[k]) for i in inputs}) == len(inputs)
            ),
            None,
        )
        for count, n in enumerate(members, 1):
            tag = _scalar(forms[n].interrupt.input[key]) if key is not None else f"#{count}"
            names[n] = f"{name} ({tag})"
    return names


def did(form: Any, name: str) -> str:
    """What the answer to one call did, in words ("" when the answer itself was the output)."""
    expired = getattr(form, "expired", None)
    if expired is not None:
        applied = expired.answer.get("applied") if isinstance(expired.answer, dict) else None
        return f"{name} ran" if isinstance(applied, dict) and "approve" in applied else f"{name} did not run"
    elsewhere = getattr(form, "elsewhere", None)
    if elsewhere is not None:
        return f"{name}: {record_words(elsewhere)}"
    answer = form.answer
    if answer is None:
        return ""
    if answer.verb == "denied":
        return f"{name} did not run" if answer.kind == "respond" else f"{name} was told no"
    if answer.kind == "restart":
        return f"{name} ran" + (" with your changes" if answer.changed else "")
    return ""


def outcome_line(view: TurnView, *, repaused: bool = False) -> str:
    """The status line of `view` once its answers took effect (see the module docstring)."""
    names = call_names(view.forms)
    done = [words for form, name in zip(view.forms, names, strict=True) if (words := did(form, name))]
    if repaused:
        done.append("the assistant asks again below")
    expired = [f.expired for f in view.forms if getattr(f, "expired", None) is not None]
    if expired:
        when = local_time(expired[0].answer.get("at")) if isinstance(expired[0].answer, dict) else ""
        head = f"Expired at {when}" if when else "Expired"
        return f"{head} · {', '.join(done)}" if done else head
    verbs = {f.answer.verb for f in view.forms if f.answer is not None}
    verb = verbs.pop() if len(verbs) == 1 else "answered"
    by = "you" if getattr(view, "you", False) else view.answered_by
    return answer_line(verb, by=by, at=view.answered_at, outcome=", ".join(done))
