"""Question and approval cards for a harness: what ``on_card`` is given (:class:`Card`), what it
may return (:class:`Answer`, :class:`Skip`, or a shortcut), and the fail-closed reading of
whatever it does into the reply the run's question desk takes."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Callable, Dict, Literal, Optional, Sequence, Tuple, Union

_log = logging.getLogger("agent_tools")


@dataclass(frozen=True)
class CardOption:
    """One numbered choice of a card."""

    number: int
    label: str
    description: Optional[str] = None


@dataclass(frozen=True)
class Card:
    """A numbered card for the operator: a question the model asked (``ask_user``) or an
    approval the run's policy needs before a write or exec tool runs."""

    #: 1, 2, 3 … per run, questions and approvals alike.
    number: int
    kind: Literal["question", "approval"]
    question: str
    context: Optional[str]
    options: Tuple[CardOption, ...]
    allow_free_text: bool
    multi_select: bool
    #: The card as plain text (numbered options, how to answer), ready to show a person.
    text: str
    #: Why the previous answer to this same card was refused (the card comes back once more).
    rejected: Optional[str] = None

    def option(self, label: str) -> Optional[int]:
        """The number of the option labelled ``label`` (any case), or ``None``."""
        wanted = label.strip().lower()
        for option in self.options:
            if option.label.lower() == wanted:
                return option.number
        return None


@dataclass(frozen=True)
class Answer:
    """The operator's answer: options chosen by number and/or typed text."""

    selected: Sequence[int] = ()
    free_text: Optional[str] = None


@dataclass(frozen=True)
class Skip:
    """The operator declined the card (``dismissed=True``: closed it without choosing). A
    skipped question tells the model to go on under a stated assumption; a skipped approval
    denies."""

    dismissed: bool = False


#: What ``on_card`` may return: an :class:`Answer`, a :class:`Skip`, an option number, a list of
#: option numbers, a ``str`` (typed text), or on an approval card ``True`` (Allow) / ``False``
#: (Deny).
CardReply = Union[Answer, Skip, int, Sequence[int], str, bool]
CardHandler = Callable[[Card], CardReply]

_SHAPES = (
    "return an Answer, a Skip, an option number, a list of option numbers or a str of typed "
    "text (True or False on an approval card)"
)


def presenter(handler: CardHandler) -> Callable[[str, Optional[str]], str]:
    """``handler`` as the native port calls it: card JSON in, reply JSON out. What the handler
    raises or returns that is no answer becomes "no operator", with the cause in the reason
    (and the traceback on the ``agent_tools`` logger): the card fails closed."""

    def present(card_json: str, rejected_json: Optional[str]) -> str:
        card = _card(json.loads(card_json), None if rejected_json is None else json.loads(rejected_json))
        try:
            returned = handler(card)
        except Exception as e:
            _log.exception("the card handler raised on card %d", card.number)
            return _no_operator(f"the card handler raised {type(e).__name__}: {e}")
        reply = _reply(card, returned)
        if reply is None:
            shown = repr(returned)
            if len(shown) > 80:
                shown = shown[:77] + "..."
            _log.warning("the card handler returned %s on card %d; %s", shown, card.number, _SHAPES)
            return _no_operator(f"the card handler returned {shown}, which is no answer; {_SHAPES}")
        return json.dumps(reply)

    return present


def _card(raw: Dict[str, Any], rejected: Optional[Dict[str, Any]]) -> Card:
    card = raw["card"]
    return Card(
        number=card["number"],
        kind=card["kind"],
        question=card["question"],
        context=card.get("context"),
        options=tuple(
            CardOption(o["number"], o["label"], o.get("description")) for o in card["options"]
        ),
        allow_free_text=card["allow_free_text"],
        multi_select=card["multi_select"],
        text=raw["text"],
        rejected=None if rejected is None else rejected["reason"],
    )


def _reply(card: Card, returned: object) -> Optional[Dict[str, Any]]:
    """The desk's reply for what the handler returned, or ``None`` when it is no answer."""
    if isinstance(returned, Skip):
        return {"reply": "skipped", "how": "dismissed" if returned.dismissed else "declined"}
    if isinstance(returned, bool):
        if card.kind != "approval":
            return None
        number = card.option("Allow" if returned else "Deny")
        return None if number is None else _answered([number], None)
    if isinstance(returned, Answer):
        if returned.free_text is not None and not isinstance(returned.free_text, str):
            return None
        return _answered(returned.selected, returned.free_text)
    if isinstance(returned, int):
        return _answered([returned], None)
    if isinstance(returned, str):
        return _answered([], returned)
    if isinstance(returned, (list, tuple)):
        return _answered(returned, None)
    return None


def _answered(selected: Sequence[object], free_text: Optional[str]) -> Optional[Dict[str, Any]]:
    numbers = list(selected)
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers):
        return None
    reply: Dict[str, Any] = {"reply": "answered", "selected": numbers}
    if free_text is not None:
        reply["free_text"] = free_text
    return reply


def _no_operator(reason: str) -> str:
    return json.dumps({"reply": "no_operator", "reason": reason})
