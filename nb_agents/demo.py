"""``make demo``: a banking agent whose transfers pause for your approval.

Runs in the terminal on an offline, rule-based model (no API key needed):
the agent checks a balance (that tool runs freely), then asks to transfer
money, which pauses the turn; you approve or deny at the prompt (``--yes``
approves without asking) and the turn resumes where it paused.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from pydantic import BaseModel

import nb_agents as nba
from nb_agents.models.defaults import choose_model
from nb_agents.testing import FunctionModel
from nb_agents.types import GenerateRequest

__all__ = ["build_agent", "main"]


class TransferInput(BaseModel):
    amount: float
    toAccount: str


class TransferOutput(BaseModel):
    success: bool
    transactionId: str | None = None


class ApprovalReply(BaseModel):
    approved: bool


def offline_model() -> FunctionModel:
    """The rule-based stand-in used when no API key is set."""
    return FunctionModel(_rules, name="offline-demo")


def build_agent(
    store: nba.SessionStore | None = None, model: nba.Model | None = None
) -> tuple[nba.Agent, nba.Tool, dict[str, float]]:
    """The demo agent, its transfer tool and the accounts it moves money between."""
    accounts = {"checking": 1200.0, "savings": 300.0}
    transactions: list[TransferInput] = []

    @nba.tool(name="getBalance")
    def get_balance(account: str) -> float:
        """The balance of an account: 'checking' or 'savings'."""
        if account not in accounts:
            raise nba.ToolFail(f"unknown account {account!r}; use 'checking' or 'savings'")
        return accounts[account]

    @nba.resumable_tool(name="transferMoney", resume=ApprovalReply)
    def transfer_money(inp: TransferInput, reply: ApprovalReply | None) -> TransferOutput:
        """Transfer money from checking, pausing for the user's approval."""
        if inp.toAccount not in accounts:
            raise nba.ToolFail(f"unknown account {inp.toAccount!r}; use 'checking' or 'savings'")
        if reply is None:
            raise nba.Interrupt({"details": f"Transfer ${inp.amount:,.2f} from checking to {inp.toAccount}"})
        if not reply.approved:
            return TransferOutput(success=False)
        accounts["checking"] -= inp.amount
        accounts[inp.toAccount] += inp.amount
        transactions.append(inp)
        return TransferOutput(success=True, transactionId=f"txn-{len(transactions):04d}")

    agent = nba.define_agent(
        "bankingAgent",
        model=model or offline_model(),
        system="You are a banking assistant. Use transferMoney to move funds; it pauses for approval.",
        tools=[get_balance, transfer_money],
        store=store or nba.InMemorySessionStore(),
    )
    return agent, transfer_money, accounts


def _call(name: str, ref: str, inp: dict[str, Any]) -> dict[str, Any]:
    return {
        "message": {"role": "model", "content": [{"toolRequest": {"name": name, "ref": ref, "input": inp}}]},
        "finishReason": "stop",
    }


def _rules(req: GenerateRequest) -> dict[str, Any] | str:
    """A tiny rule-based stand-in for a real model."""
    last = req.messages[-1]
    if last.role == "tool":
        out = last.content[0].tool_response
        assert out is not None
        if out.name == "getBalance":
            return f"Your {out.ref} balance is ${out.output:,.2f}."
        if isinstance(out.output, dict) and out.output.get("success"):
            return f"Done: the transfer went through (transaction {out.output['transactionId']})."
        return "OK, I did not make the transfer."
    text = last.text.lower()
    if m := re.search(r"\$?([\d,.]+)\s*(?:dollars\s*)?to\s*(?:my\s*)?(\w+)", text):
        amount = float(m.group(1).replace(",", ""))
        return _call("transferMoney", "t1", {"amount": amount, "toAccount": m.group(2)})
    if "balance" in text:
        account = "savings" if "saving" in text else "checking"
        return _call("getBalance", account, {"account": account})
    return "I can tell you a balance or transfer money between checking and savings."


def _ask(prompt: str, assume_yes: bool) -> bool:
    if assume_yes:
        print(f"{prompt} y (--yes)")
        return True
    try:
        answer = input(f"{prompt} [y/N] ")
    except EOFError:
        print("\n(no input: treating it as 'no'; run with --yes to approve automatically)")
        return False
    return answer.strip().lower() in ("y", "yes")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nb_agents.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--yes", action="store_true", help="approve every transfer without asking")
    parser.add_argument("--offline", action="store_true", help="use the offline model even if a key is set")
    args = parser.parse_args(argv)
    if args.offline:
        model: nba.Model = offline_model()
        description = "model: offline rule-based demo model (--offline)"
    else:
        choice = choose_model(offline_model())
        model, description = choice.model, choice.description
    agent, transfer_money, accounts = build_agent(model=model)
    print("nb_agents demo: a banking agent whose transfers pause for your approval.")
    print(f"({description})\n")
    chat = agent.chat()
    for text in [
        "What's my checking balance?",
        "Transfer $500 to my savings account.",
        "And my savings balance?",
    ]:
        print(f"you>   {text}")
        res = chat.send_sync(text)
        while res.finish_reason == "interrupted":
            restart = []
            for part in res.raw.interrupts():
                call = transfer_money.interrupted(part)
                assert call is not None and call.data is not None
                print(f"pause> the agent wants to run {call.name}: {call.data['details']}")
                approved = _ask("       Approve?", args.yes)
                restart.append(call.restart(ApprovalReply(approved=approved)))
            res = chat.resume_sync(restart=restart)
        print(f"agent> {res.text}\n")
    print(f"Accounts now: checking ${accounts['checking']:,.2f}, savings ${accounts['savings']:,.2f}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
