"""The commands of one benchmark each (`biaseval winomt`, `gest`, `mtgeneval`): the tables their docs
hold, recomputed, and their charts. cli.py adds them to the `biaseval` command."""

from __future__ import annotations

from pathlib import Path

import click


@click.group()
def winomt() -> None:
    """WinoMT from English: our labels against mt_gender's human annotations."""


@winomt.command("disagreements")
@click.option("--lang", "langs", multiple=True, help="an annotated target language (repeatable; default: all)")
@click.option("--items", is_flag=True, help="also list every disagreement with its class")
def winomt_disagreements(langs: tuple[str, ...], items: bool) -> None:
    """Where our labels and mt_gender's annotators disagree, by class, per language (Markdown).

    Labels each language's annotated translations twice (entity-alignment, and
    entity-alignment-pronoun for the pronoun-following reading); seconds per language."""
    from biaseval.data.datasets import resolve
    from biaseval.label.rules import builtin
    from biaseval.metrics.disagreements import classify
    from biaseval.metrics.human_agreement import ANNOTATIONS, label_annotated
    from biaseval.report.disagreements import disagreements_markdown

    unknown = [lang for lang in langs if lang not in ANNOTATIONS]
    if unknown:
        raise click.BadParameter(f"no annotations for {', '.join(unknown)}; annotated: {', '.join(sorted(ANNOTATIONS))}",
                                 param_hint="--lang")
    data = resolve("mt-gender")
    detectors = {"": builtin().get("entity-alignment"), "pronoun": builtin().get("entity-alignment-pronoun")}
    labelled = {lang: label_annotated(data, lang, detectors) for lang in (langs or sorted(ANNOTATIONS))}
    classified = {lang: classify(frame, lang) for lang, frame in labelled.items()}
    click.echo(disagreements_markdown(labelled, classified, items=items), nl=False)


@click.group()
def gest() -> None:
    """GEST: the speaker reader measured against gold; the masculine rate per stereotype as a chart."""


@gest.command("reader-table")
def gest_reader_table() -> None:
    """The speaker reader against the gold sets, per language (Markdown; docs/gest.md holds it). Seconds."""
    from biaseval.data.datasets import resolve
    from biaseval.metrics.gest_reader import table
    from biaseval.report.gest import reader_markdown

    click.echo(reader_markdown(table(resolve("gest"))), nl=False)


@gest.command("chart")
@click.option("--run", "run_dir", required=True, type=click.Path(exists=True, file_okay=False),
              help="a scored run directory (its metrics.parquet)")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False), help="the PNG to write")
@click.option("--suite", default="gest", show_default=True, type=click.Choice(["gest", "gest-1.1"]))
def gest_chart(run_dir: str, out: str, suite: str) -> None:
    """The masculine rate per stereotype: a panel per system, a column per language (PNG; report.html and
    report.md show the same chart)."""
    import polars as pl

    from biaseval.report.gest_charts import stereotype_heatmap
    from biaseval.report.plots import system_colours

    metrics = pl.read_parquet(Path(run_dir) / "metrics.parquet")
    rates = metrics.filter((pl.col("suite") == suite) & (pl.col("metric") == "masculine_rate"))
    if rates.height == 0:
        raise click.ClickException(f"{run_dir}: no {suite} masculine rates in metrics.parquet")
    Path(out).write_bytes(stereotype_heatmap(rates, system_colours(rates["system"].unique(maintain_order=True))))
    click.echo(out)


@click.group()
def mtgeneval() -> None:
    """MT-GenEval: the references' undecidable lines; the analysers against its tagged references."""


@mtgeneval.command("undecidable")
@click.option("--split", type=click.Choice(["test", "dev"]), default="test")
def mtgeneval_undecidable(split: str) -> None:
    """Lines of the counterfactual set whose two references leave nothing to decide (Markdown)."""
    from biaseval.metrics.mtgeneval import undecidable
    from biaseval.report.mtgeneval import undecidable_markdown
    from biaseval.suites import SUITES

    name = "mt-geneval-counterfactual" + ("" if split == "test" else "-dev")
    click.echo(undecidable_markdown(undecidable(SUITES.get(name).open().table, split)), nl=False)


@mtgeneval.command("labeller-table")
@click.option("--split", type=click.Choice(["test", "dev"]), default="test")
def mtgeneval_labeller_table(split: str) -> None:
    """biaseval's gender analysers read against MT-GenEval's tagged references, per language (Markdown;
    docs/mt-geneval.md holds the test split's). Seconds per language."""
    from biaseval.data.datasets import resolve
    from biaseval.metrics.mtgeneval_labeller import table
    from biaseval.report.mtgeneval import labeller_markdown

    click.echo(labeller_markdown(table(resolve("mt-geneval"), split)), nl=False)
