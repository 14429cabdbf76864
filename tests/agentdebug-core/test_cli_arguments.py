"""What the commands make of odd arguments: an empty run id or filter (a shell
variable never set), an age too large for a date, a count below one, and what the
help says of exit statuses."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES, run_cli

EXAMPLE = str(EXAMPLES / "failed_booking.json")


@pytest.mark.parametrize(
    "args",
    [
        ("list", "--branches-of", ""),  # (before: every run listed, as if each were a rerun)
        ("list", "--agent", ""),  # (before: the filter dropped, every run listed)
        ("list", "--framework", " "),
        ("list", "--since", ""),
        ("show", ""),  # (before: "run id '' is ambiguous" or the only run shown)
        ("diagnose", ""),  # (before: "error: .: is a directory, not a file")
        ("diff", "", "example-failed-booking"),
        ("act", ""),
    ],
)
def test_an_empty_run_id_or_filter_is_refused(args: tuple[str, ...]) -> None:
    assert run_cli("ingest", EXAMPLE).returncode == 0
    result = run_cli(*args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "empty; give a" in result.stderr
    assert "example-failed-booking" not in result.stdout  # nothing listed or shown
    assert "Traceback" not in result.stderr


def test_an_age_past_the_year_one_is_a_one_line_error() -> None:
    """Before, `--since 99999999999d` was "internal error: OverflowError ... (this is
    a bug in agentdebug)", exit 3; `prune --older-than` the same."""
    assert run_cli("ingest", EXAMPLE).returncode == 0
    for args in (
        ("list", "--since", "99999999999d"),
        ("prune", "--older-than", "99999999999d", "--dry-run"),
    ):
        result = run_cli(*args)
        assert result.returncode == 1, result.stderr
        err = result.stderr.strip()
        assert len(err.splitlines()) == 1 and "internal error" not in err
        assert "'99999999999d' reaches back before the year 1" in err
    huge = run_cli("list", "--since", "9" * 5000 + "d")  # (more digits than int() reads)
    assert huge.returncode == 1 and "internal error" not in huge.stderr, huge.stderr
    assert "example-failed-booking" in run_cli("list", "--since", "9999d").stdout


def test_counts_below_one_are_refused(tmp_path: Path) -> None:
    """Before, `act --max-rounds 0` printed a plan and exited 0 (the loop limit was
    taken and only refused once a rerun started), and `bench --workers 0` ran."""
    assert run_cli("ingest", EXAMPLE).returncode == 0
    act = run_cli("act", "example-failed-booking", "--max-rounds", "0")
    assert act.returncode == 2
    assert "Invalid value for '--max-rounds': 0 is not in the range x>=1" in act.stderr
    assert "Directive" not in act.stdout
    bench = run_cli("bench", "whowhen", str(tmp_path), "--workers", "0")
    assert bench.returncode == 2
    assert "Invalid value for '--workers': 0 is not in the range x>=1" in bench.stderr


def test_the_help_says_what_each_exit_status_means() -> None:
    shown = run_cli("--help")
    assert shown.returncode == 0
    text = " ".join(shown.stdout.split())
    assert "Exit status: 0 done; 1 an error in what was asked" in text
    assert "3 a bug in agentdebug" in text and "130 `act` stopped by Ctrl-C" in text


def test_runs_are_listed_by_a_value_of_their_metadata(home: Path) -> None:
    """``--meta langgraph.thread_id=chat-1``: a chat thread's runs, not another's;
    a filter that is no PATH=VALUE is a usage error naming it."""
    from agentdebug import AgentDebug

    dbg = AgentDebug(home)
    for i, thread in enumerate(["chat-1", "chat-2", "chat-1"]):
        with dbg.trace(f"turn {i}", metadata={"langgraph": {"thread_id": thread}}) as run:
            run.record("final_answer", output="ok")
    dbg.close()
    listed = run_cli("list", "--meta", "langgraph.thread_id=chat-1").stdout
    assert "turn 0" in listed and "turn 2" in listed and "turn 1" not in listed
    assert "turn 1" in run_cli("list", "--meta", "langgraph.thread_id=chat-2").stdout
    refused = run_cli("list", "--meta", "thread id")
    assert refused.returncode == 2 and "Invalid value for --meta: 'thread id'" in refused.stderr
