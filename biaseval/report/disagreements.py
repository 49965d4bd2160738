"""What ``biaseval winomt disagreements`` prints: per language, agreement with mt_gender's annotators
under the noun-phrase reading and the pronoun-following one, and the disagreements by class
(``biaseval.metrics.disagreements``); with ``items``, every disagreement. Pure: frames in, Markdown out.
"""

from __future__ import annotations

import polars as pl

from biaseval.metrics.disagreements import CLASSES, class_counts
from biaseval.metrics.human_agreement import agreement
from biaseval.report.escape import md, row


def disagreements_markdown(labelled: dict[str, pl.DataFrame], classified: dict[str, pl.DataFrame],
                           items: bool = False) -> str:
    """``labelled``: language -> ``label_annotated`` rows (label and label_pronoun); ``classified``:
    language -> ``classify`` rows."""
    counts = {r["language"]: r for r in class_counts(classified).iter_rows(named=True)}
    lines = ["| language | clear | agree (noun) | agree (pronoun) | disagree | " + " | ".join(CLASSES) + " |",
             "|---" * (5 + len(CLASSES)) + "|"]
    for lang, frame in labelled.items():
        noun, n = agreement(frame)
        pronoun, _ = agreement(frame, "label_pronoun")
        count = counts[lang]
        lines.append(row(lang, n, f"{100 * noun:.0f} %", f"{100 * pronoun:.0f} %", count["total"],
                         *(count[c] for c in CLASSES)))
    lines += ["", "clear: annotations with the entity found and a male or female gender; agree: the share of "
              "those our label equals, reading the noun phrase (entity-alignment) or letting a later pronoun "
              "decide (entity-alignment-pronoun). The disagreements (noun reading) by class:", ""]
    lines += [f"- `{name}`: {text}" for name, text in CLASSES.items()]
    if items:
        for lang, frame in classified.items():
            lines += ["", f"### {md(lang)}", "", "| index | annotator | ours | pronoun reading | class | translation |",
                      "|---|---|---|---|---|---|"]
            for r in frame.sort("class", "index").iter_rows(named=True):
                ours = f"{r['label']} ({r['reason']}: {r['evidence'] or ''})"
                pronoun = f"{r['label_pronoun']} ({r['evidence_pronoun'] or ''})" if r["reason_pronoun"] == "pronoun" else "—"
                klass = r["class"] + (f": {r['note']}" if r["note"] else "")
                lines.append(row(r["index"], r["human"], ours, pronoun, klass, r["translation"]))
    return "\n".join(lines) + "\n"
