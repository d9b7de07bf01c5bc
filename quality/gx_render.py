"""Data Docs that show the verdict (``quality.verdict``): passed, warning or error, never "failed" for a
warning.

GX renders a validation and each of its expectations as succeeded (green check) or failed (red cross):
a validation whose only unmet expectations are ``warn``/``drop`` ones was a red "Failed" in the index
and on its page, while ``streamhouse check`` called it "0 errors, 9 warnings". GX 1.x does know an
expectation's ``severity`` (critical, warning, info; ``ExpectationSuiteValidationResult
.get_max_severity_failure``), and ``quality.gx`` sets it (critical for ``fail``, warning otherwise), but
its Data Docs renderers ignore it. The site is therefore configured (``quality.gx.SITE_CONFIG``) with
the renderers below, subclasses of GX's own that draw three states with Bootstrap's colours:

* each expectation: green check (passed), yellow warning sign (warning, also GX's sign for one that
  could not be compared), red cross (error);
* a validation page's "Status:" line and the index's status column: "Passed", "Warning", "Error",
  with the same icons. The index only knows a validation's ``success`` and its ``batch_spec``, so
  ``quality.gx`` stores the verdict in the batch spec (``verdict``); an older validation without it
  keeps GX's own rendering.

GX's ``success`` stays its own meaning (every expectation held), as its checkpoint actions expect.
GX imports this module by name when it builds the site (after ``quality.gx`` has imported GX).
"""

from __future__ import annotations

from typing import Any

from great_expectations.render import RenderedStringTemplateContent
from great_expectations.render.renderer import SiteIndexPageRenderer, ValidationResultsPageRenderer
from great_expectations.render.renderer.content_block import ValidationResultsTableContentBlockRenderer

from quality.gx import VERDICT_KEY
from quality.verdict import ERROR, PASSED, WARNING

#: Font-awesome icon and Bootstrap colour of each verdict (GX's own for passed and failed).
ICONS = {
    PASSED: ["fas", "fa-check-circle", "text-success"],
    WARNING: ["fas", "fa-exclamation-triangle", "text-warning"],
    ERROR: ["fas", "fa-times", "text-danger"],
}
#: What the status line and the index's status filter say.
LABELS = {PASSED: "Passed", WARNING: "Warning", ERROR: "Error"}


def result_verdict(result: Any) -> str:
    """One expectation's result: an unmet one is an error only if its severity is critical; one that
    raised (could not be compared) is a warning."""
    if result.success:
        return PASSED
    info = result.exception_info or {}
    if info.get("raised_exception"):
        return WARNING
    config = result.expectation_config
    severity = getattr(config, "severity", None) if config is not None else None
    return ERROR if str(getattr(severity, "value", severity) or "critical") == "critical" else WARNING


def validation_verdict(validation: Any) -> str:
    """A validation's verdict: its worst expectation's."""
    verdicts = {result_verdict(r) for r in validation.results}
    return ERROR if ERROR in verdicts else WARNING if WARNING in verdicts else PASSED


def _html_icon(verdict: str) -> str:
    return f'<i class="{" ".join(ICONS[verdict])}" aria-hidden="true"></i>'


class VerdictTableRenderer(ValidationResultsTableContentBlockRenderer):
    """GX's table of expectation results, with a warning's status icon the yellow warning sign."""

    @classmethod
    def _get_content_block_fn(cls, expectation_type: str, expectation_config: Any = None) -> Any:
        row_fn = super()._get_content_block_fn(expectation_type, expectation_config)
        if row_fn is None:
            return None

        def row(
            configuration: Any = None, result: Any = None, runtime_configuration: Any = None, **kwargs: Any
        ):
            out = row_fn(
                configuration=configuration,
                result=result,
                runtime_configuration=runtime_configuration,
                **kwargs,
            )
            if result is not None and result_verdict(result) == WARNING and out and out[0]:
                out[0][0] = _status_icon(WARNING)
            return out

        return row


def _status_icon(verdict: str) -> RenderedStringTemplateContent:
    return RenderedStringTemplateContent(
        content_block_type="string_template",
        string_template={
            "template": "$icon",
            "params": {"icon": "", "markdown_status_icon": "⚠️"},
            "styling": {
                "params": {
                    "icon": {
                        "tag": "i",
                        "classes": ICONS[verdict],
                        "attributes": {"title": f"{verdict}: did not hold (reported, blocks nothing)"},
                    }
                }
            },
        },
    )


class VerdictValidationPageRenderer(ValidationResultsPageRenderer):
    """A validation page whose status line says Passed, Warning or Error, and whose expectation rows
    use ``VerdictTableRenderer``."""

    def __init__(
        self, column_section_renderer: Any = None, run_info_at_end: bool = False, data_context: Any = None
    ):
        if column_section_renderer is None:
            column_section_renderer = {
                "class_name": "ValidationResultsColumnSectionRenderer",
                "table_renderer": {"module_name": __name__, "class_name": "VerdictTableRenderer"},
            }
        super().__init__(column_section_renderer, run_info_at_end, data_context)

    @classmethod
    def _render_validation_header(cls, validation_results: Any) -> Any:
        header = super()._render_validation_header(validation_results)
        verdict = validation_verdict(validation_results)
        params = header.subheader.string_template["params"]
        params["success"] = LABELS[verdict]
        params["html_success_icon"] = _html_icon(verdict)
        return header


class VerdictIndexPageRenderer(SiteIndexPageRenderer):
    """The index's validation table with each row's status the validation's verdict (from the
    ``verdict`` that ``quality.gx`` stores in the batch spec)."""

    @classmethod
    def _generate_validation_results_link_table(cls, index_links_dict: Any) -> Any:
        table = super()._generate_validation_results_link_table(index_links_dict)
        links = index_links_dict.get("validations_links", [])
        for row, link in zip(table.table_data, links, strict=True):
            verdict = (link.get("batch_spec") or {}).get(VERDICT_KEY)
            if verdict not in LABELS:
                continue  # stored before verdicts were: GX's own rendering
            row["validation_success"] = _index_cell(verdict)
            row["_validation_success_text"] = LABELS[verdict]
        return table


def _index_cell(verdict: str) -> RenderedStringTemplateContent:
    return RenderedStringTemplateContent(
        content_block_type="string_template",
        string_template={
            "template": "$validation_success",
            "params": {"validation_success": ""},
            "styling": {
                "params": {
                    "validation_success": {
                        "tag": "i",
                        "classes": [*ICONS[verdict], f"ge-{verdict}-icon"],
                        "attributes": {"title": LABELS[verdict]},
                    }
                },
                "classes": ["ge-index-page-table-validation-links-item"],
            },
        },
    )
