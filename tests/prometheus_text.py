"""The Prometheus exposition innostall serves and writes, read by the real parser: shared by
tests/pure/ and tests/live/."""
from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


def parse(text: str) -> dict[str, dict]:
    """{metric family name: {(sample name, sorted labels): value}}, by the real parser."""
    return {family.name: {(s.name, tuple(sorted(s.labels.items()))): s.value for s in family.samples}
            for family in text_string_to_metric_families(text)}


def value(families: dict, family: str, sample: str | None = None, **labels) -> float:
    return families[family][(sample or family, tuple(sorted(labels.items())))]
