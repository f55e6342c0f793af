"""An accessibility check of whatever a Playwright page shows now: axe-core (vendored from npm in
``tests/support/vendor/axe.min.js``, with its licenses; for tests only, never served) run in the
page, failing on every violation of impact "serious" or "critical".

Any browser test can call ``assert_accessible(page, "where")`` after it opens a page, a form or a
dialog; the message names each rule, its help text and the elements that break it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.async_api import Page

AXE = Path(__file__).parent / "vendor" / "axe.min.js"
BLOCKING = ("serious", "critical")

_RUN = """async (impacts) => {
  const result = await axe.run(document, { resultTypes: ["violations"] });
  return result.violations
    .filter((v) => impacts.includes(v.impact))
    .map((v) => ({
      id: v.id, impact: v.impact, help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target.join(" "), summary: n.failureSummary })),
    }));
}"""


async def axe_violations(page: Page, impacts: tuple[str, ...] = BLOCKING) -> list[dict[str, Any]]:
    """The violations of ``impacts`` on the page as it is now (axe loaded once per document)."""
    if not await page.evaluate("() => typeof window.axe !== 'undefined'"):
        # Evaluated, not added as a <script>: the page's CSP does not apply and nothing is served.
        await page.evaluate(AXE.read_text(encoding="utf-8"))
    found: list[dict[str, Any]] = await page.evaluate(_RUN, list(impacts))
    return found


def describe(violations: list[dict[str, Any]]) -> str:
    lines = []
    for violation in violations:
        lines.append(f"{violation['impact']}: {violation['id']} ({violation['help']})")
        lines.extend(f"    {node['target']}: {node['summary']}" for node in violation["nodes"][:5])
    return "\n".join(lines)


async def assert_accessible(page: Page, where: str) -> None:
    """Fail naming every serious or critical accessibility violation of what the page shows."""
    violations = await axe_violations(page)
    assert not violations, f"accessibility violations on {where}:\n{describe(violations)}"
