"""docs/operations.md quotes the HAProxy configuration the balancer tests run, not a copy that
could drift from it."""

from __future__ import annotations

from tests.support.haproxy import TEMPLATE
from tests.support.process import REPO


def test_the_operations_doc_quotes_the_tested_haproxy_template_verbatim() -> None:
    doc = (REPO / "docs" / "operations.md").read_text()
    assert f"```\n{TEMPLATE.read_text().rstrip()}\n```" in doc
