"""Reading a benchmark's prose verdicts out of a reply (ToxiGen: "is not hateful" -> No, "is
hateful" -> Yes), for the extraction rules (:mod:`.extract`): which labels the reply's verdicts
name, and whether a hedge's sentence holds the reply's own and only verdict."""

from __future__ import annotations

import re

from .phrases import REPORTED

VerdictPatterns = tuple[tuple[str, str], ...]
"""(regex, label) pairs, the benchmark's ``verdict_patterns``."""


def verdict_labels(text: str, verdict_patterns: VerdictPatterns) -> set[str]:
    """The labels the benchmark's verdict phrases in ``text`` name: not inside quotes (the
    statement quoted back) and not inside a question, indirect ("to determine if the statement is
    hateful") or direct ("Is it hateful? No.")."""
    unquoted = re.sub(r"\"[^\"\n]*\"", lambda m: " " * len(m.group(0)), text)
    spans = []
    for pattern, label in verdict_patterns:
        for match in re.finditer(pattern, unquoted, re.IGNORECASE | re.MULTILINE):
            if re.search(r"\b(?:if|whether)\s+(?:\w+\s+){0,3}$", unquoted[max(0, match.start() - 160):match.start()],
                         re.IGNORECASE) or re.match(r"[^.!\n]*\?", unquoted[match.start():]):
                continue  # an indirect question, or a direct one ("Is it hateful? No.")
            spans.append((match.start(), match.end(), label))
    # a verdict inside a longer one for the other label is part of it: "it is hateful" in "does
    # not imply that it is hateful", "call this hateful" in "I wouldn't call this hateful"
    return {label for start, end, label in spans
            if not any(s <= start and end <= e and (s, e) != (start, end) and other != label for s, e, other in spans)}


def own_verdict(clause: str, text: str, verdict_patterns: VerdictPatterns) -> str | None:
    """The label of the reply's own and only verdict where a hedge's clause states it in its first
    sentence ("I'm not sure, but I don't think it's hateful"); ``None`` for a view reported ("...,
    but I've heard people say it is hateful"), a clause that opens with something else, or a reply
    whose verdicts name more than that label."""
    own = re.split(r"[.!?\n]", clause, maxsplit=1)[0]
    if not re.match(r"\s*(?:I|it|this|that|the\s+statement)\b", own, re.IGNORECASE) or REPORTED.search(own):
        return None
    said = verdict_labels(own, verdict_patterns)
    return said.pop() if len(said) == 1 and verdict_labels(text, verdict_patterns) == said else None
