"""S5's exactly-once check, from the ledger the served tool appends to.

Each line is ``<cycle id> <idempotency key> <server pid>``: one per run of the
tool. A cycle the client completed must have exactly ``1 + retries`` lines,
where ``retries`` counts the explicit retries that client sent for it (a retry
is a new, audited attempt at the same answer, so it legitimately runs the tool
once more); all of a cycle's lines carry one key, and no two cycles share a
key. One exception is counted apart, not as a failure: a retry of a recorded
``aborted`` outcome whose attempt never reached the tool's body (then the
cycle has ``retries`` lines: the tool still ran at most once per attempt that
acted). Anything else is a tool run twice (beyond the explicit retries), a run
missing, a run for a cycle the client never saw end, or an unstable key.
"""

from __future__ import annotations

import collections
import os
from typing import Any

SAMPLES = 10


def read_ledger(path: str) -> list[tuple[str, str, str]]:
    """The ledger's lines as (cycle id, key, pid); an absent file is an empty ledger."""
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as fh:
        for line in fh:
            cycle, key, pid = ([*line.split(), "-", "-"])[:3]
            if cycle:
                out.append((cycle, key, pid))
    return out


def check_ledger(
    path: str, completed: list[str], resends: int, retries: dict[str, int] | None = None
) -> dict[str, Any]:
    """Compare the ledger with the cycles the clients completed and the retries they sent."""
    retries = retries or {}
    lines = read_ledger(path)
    runs = collections.Counter(c for c, _, _ in lines)
    keys: dict[str, set[str]] = collections.defaultdict(set)
    cycles_of_key: dict[str, set[str]] = collections.defaultdict(set)
    for cycle, key, _ in lines:
        keys[cycle].add(key)
        cycles_of_key[key].add(cycle)
    done = set(completed)

    def expected(cycle: str) -> int:
        return 1 + retries.get(cycle, 0)

    twice = sorted(c for c, n in runs.items() if n > expected(c))
    # a retry may answer a recorded "aborted" whose attempt never reached the tool's body: the
    # tool then ran once in all, which is at most once; fewer runs than retries is a run missing
    short = sorted(c for c in done if retries.get(c, 0) and runs[c] == retries[c])
    missing = sorted(c for c in done if runs[c] < max(1, retries.get(c, 0)))
    extra = sorted(runs.keys() - done)
    no_key = sorted(c for c, ks in keys.items() if "-" in ks or "" in ks)
    split = sorted(c for c, ks in keys.items() if len(ks) > 1)
    shared = sorted(k for k, cs in cycles_of_key.items() if len(cs) > 1)
    per_key = collections.Counter(collections.Counter(k for _, k, _ in lines).values())
    retried_ran = sum(1 for c in retries if runs[c] == expected(c))
    return {
        "ledger_entries": len(lines),
        "completed_cycles": len(completed),
        "expected_entries": sum(expected(c) for c in done),
        "resends_checked": resends,
        "explicit_retries": sum(retries.values()),
        "retried_cycles_with_one_more_run": retried_ran,
        "retried_cycles_whose_aborted_attempt_ran_no_tool": len(short),
        "retried_cycles_whose_aborted_attempt_ran_no_tool_samples": short[:SAMPLES],
        "runs_per_key": {str(n): count for n, count in sorted(per_key.items())},
        "servers_in_ledger": len({pid for _, _, pid in lines}),
        "ran_twice": len(twice),
        "ran_twice_samples": [f"{c}: {runs[c]} runs, {retries.get(c, 0)} retries" for c in twice[:SAMPLES]],
        "missing": len(missing),
        "missing_samples": [f"{c}: {runs[c]} runs, {retries.get(c, 0)} retries" for c in missing[:SAMPLES]],
        "extra": len(extra),
        "extra_samples": extra[:SAMPLES],
        "keys_missing": len(no_key),
        "keys_unstable": len(split),
        "keys_shared": len(shared),
        "ok": not (twice or missing or extra or no_key or split or shared),
    }
