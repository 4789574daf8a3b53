"""Questions and approvals answered from Python: `Run(on_card=...)` offers `ask_user` and shows
approval cards to the handler; without one `ask_user` is absent and approvals are declined; a
handler that raises or returns no answer fails the card closed, saying why."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import List

import pytest

import agent_tools
from agent_tools import Answer, Card, Skip

QUESTION = {
    "question": "Which database should the cache use?",
    "context": "The service runs on one machine.",
    "options": [{"label": "SQLite", "description": "a file, no server"}, {"label": "Redis"}],
}


@pytest.fixture
def before_write(tmp_path: Path) -> Path:
    config = tmp_path / "approval.toml"
    config.write_text('[approval]\npolicy = "before_write"\n')
    return config


def test_without_a_handler_ask_user_is_absent_and_approvals_are_declined(
    project: Path, before_write: Path
) -> None:
    with agent_tools.Run(project) as run:
        assert "ask_user" not in run.tool_names()
    with agent_tools.Run(project, config=before_write) as run:
        assert "ask_user" not in run.tool_names()
        denied = run.call("write", {"path": "new.txt", "content": "no\n"})
    assert denied.is_error and "approval denied" in denied.text, denied.text
    assert denied.structured["approval"]["details"]["status"] == "no_operator"
    assert not (project / "new.txt").exists()


def test_a_handler_answers_ask_user_and_sees_the_whole_card(project: Path) -> None:
    cards: List[Card] = []

    def on_card(card: Card) -> int:
        cards.append(card)
        return card.option("redis") or 0

    with agent_tools.Run(project, on_card=on_card) as run:
        specs = {s.name: s for s in run.tools()}
        result = run.call("ask_user", QUESTION)
    assert specs["ask_user"].output_schema is not None and specs["ask_user"].title
    assert not result.is_error, result.text
    assert result.structured["status"] == "answered"
    assert result.structured["selected"] == [{"number": 2, "label": "Redis"}]
    assert "answered by the harness's card handler" in result.text and "2. Redis" in result.text
    [card] = cards
    assert (card.number, card.kind, card.question) == (1, "question", QUESTION["question"])
    assert card.context == "The service runs on one machine."
    assert [(o.number, o.label, o.description) for o in card.options] == [
        (1, "SQLite", "a file, no server"), (2, "Redis", None)]
    assert not card.allow_free_text and not card.multi_select and card.rejected is None
    assert "1. SQLite" in card.text and "Choose one number." in card.text


def test_approval_cards_are_answered_from_python(project: Path, before_write: Path) -> None:
    cards: List[Card] = []

    def on_card(card: Card) -> bool:
        cards.append(card)
        return "allowed.txt" in (card.context or "") + card.question

    with agent_tools.Run(project, config=before_write, on_card=on_card) as run:
        allowed = run.call("write", {"path": "allowed.txt", "content": "yes\n"})
        denied = run.call("write", {"path": "denied.txt", "content": "no\n"})
    assert not allowed.is_error, allowed.text
    assert (project / "allowed.txt").read_text() == "yes\n"
    assert denied.is_error and "approval denied" in denied.text, denied.text
    assert not (project / "denied.txt").exists()
    assert [c.kind for c in cards] == ["approval", "approval"]
    assert [o.label for o in cards[0].options] == ["Allow", "Deny"]
    assert [c.number for c in cards] == [1, 2]


def test_a_handler_that_raises_fails_the_card_closed_and_logs_why(
    project: Path, before_write: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def on_card(card: Card) -> int:
        raise RuntimeError("the operator's window is gone")

    with caplog.at_level(logging.ERROR, logger="agent_tools"):
        with agent_tools.Run(project, config=before_write, on_card=on_card) as run:
            asked = run.call("ask_user", QUESTION)
            wrote = run.call("write", {"path": "new.txt", "content": "no\n"})
    assert asked.is_error and asked.structured["status"] == "no_operator", asked.text
    assert "the card handler raised RuntimeError: the operator's window is gone" in asked.text
    assert wrote.is_error and "approval denied" in wrote.text, wrote.text
    assert "the card handler raised RuntimeError" in wrote.text
    assert not (project / "new.txt").exists()
    assert any("RuntimeError" in (r.exc_text or "") for r in caplog.records), caplog.records


@pytest.mark.parametrize("garbage", [None, object(), 2.5, {"selected": [1]}, [1, "two"], True])
def test_a_handler_that_returns_no_answer_fails_the_question_closed(project: Path, garbage: object) -> None:
    with agent_tools.Run(project, on_card=lambda card: garbage) as run:
        result = run.call("ask_user", QUESTION)
    assert result.is_error and result.structured["status"] == "no_operator", result.text
    assert "which is no answer; return an Answer, a Skip, an option number" in result.text


def test_a_refused_answer_comes_back_with_the_reason_then_typed_text_and_skips(project: Path) -> None:
    seen: List[Card] = []

    def on_card(card: Card) -> object:
        seen.append(card)
        return 7 if card.rejected is None else Answer(selected=[1], free_text="if it fits")

    with agent_tools.Run(project, on_card=on_card) as run:
        answered = run.call("ask_user", {**QUESTION, "allow_free_text": True})
    assert not answered.is_error, answered.text
    assert answered.structured["selected"] == [{"number": 1, "label": "SQLite"}]
    assert answered.structured["free_text"] == "if it fits"
    assert len(seen) == 2 and seen[0].rejected is None
    assert seen[1].rejected and "7" in seen[1].rejected and seen[1].number == seen[0].number

    with agent_tools.Run(project, on_card=lambda card: "Postgres, please") as run:
        typed = run.call("ask_user", {"question": "Which one?", "allow_free_text": True})
        # Typed text on a card that takes none is refused each time, then nothing is chosen.
        refused = run.call("ask_user", {"question": "Tabs or spaces?", "options": [
            {"label": "Tabs"}, {"label": "Spaces"}]})
    assert typed.structured["free_text"] == "Postgres, please", typed.text
    assert refused.is_error and refused.structured["status"] == "unanswered", refused.text
    with agent_tools.Run(project, on_card=lambda card: Skip()) as run:
        declined = run.call("ask_user", QUESTION)
    assert not declined.is_error and declined.structured["status"] == "skipped", declined.text
    assert declined.structured["how"] == "declined"


def test_an_asyncio_harness_answers_on_its_loop_while_the_call_is_awaited(project: Path) -> None:
    async def main() -> agent_tools.ToolResult:
        loop = asyncio.get_running_loop()

        async def ask_the_operator(card: Card) -> int:
            await asyncio.sleep(0.05)  # the harness's UI round trip
            return 1

        def on_card(card: Card) -> int:
            return asyncio.run_coroutine_threadsafe(ask_the_operator(card), loop).result()

        async with agent_tools.Run(project, on_card=on_card) as run:
            return await run.acall("ask_user", QUESTION)

    result = asyncio.run(main())
    assert not result.is_error and result.structured["selected"][0]["label"] == "SQLite", result.text


def test_on_card_must_be_callable(project: Path) -> None:
    with pytest.raises(TypeError, match=r"on_card must be callable as on_card\(card\)"):
        agent_tools.Run(project, on_card="yes")  # type: ignore[arg-type]
