"""One piece of advice, as `innostall advise` and the report's advice give it: a change, the
evidence it rests on (the report's own sentences, quoted, so it makes no claim of its own),
the effect expected in the recording's terms, the risk and how to undo it, and what `verify`
measures to confirm it."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


def said(summary: dict, start: str, holding: str = "") -> list[str]:
    """The report's findings that begin so (and hold those words), verbatim: the evidence an
    action quotes."""
    return [f for f in summary.get("findings") or [] if f.startswith(start) and holding in f]


@dataclass(frozen=True)
class Expect:
    """What verify compares between the recording as it is and the one with the change:
    a figure of the summary (summary_figures.FIGURES names them), its value here, and the
    way it should move."""
    figure: str
    now: float
    towards: str  # "down": smaller is the effect; "zero": near nothing is


@dataclass(frozen=True)
class Action:
    key: str  # what kind of change: end_pinning_transaction, purge_threads, ...
    change: str  # the change, in the imperative
    evidence: list[str]  # sentences of the report it rests on, verbatim
    expected: str  # the effect, in the recording's figures
    risk: str
    undo: str
    gives_back_s: float  # the recording's time the change would give back: the rank
    apply_sql: str | None = None  # a dynamic change as one statement; None: restart, or the application's
    undo_sql: str | None = None
    expect: Expect | None = None

    def as_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class NotHelping:
    """A common fix the recording shows would change nothing here, and why."""
    change: str
    why: str

    def as_json(self) -> dict:
        return asdict(self)


@dataclass
class Advice:
    actions: list[Action] = field(default_factory=list)
    not_helping: list[NotHelping] = field(default_factory=list)

    def ranked(self) -> Advice:
        return Advice(sorted(self.actions, key=lambda a: -a.gives_back_s), self.not_helping)

    def as_json(self) -> dict:
        return {"actions": [a.as_json() for a in self.actions],
                "not_helping": [n.as_json() for n in self.not_helping]}
