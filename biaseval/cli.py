"""The ``biaseval`` command line."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from biaseval import __version__, suite_commands
from biaseval.credentials import redact
from biaseval.errors import BiasevalError


def _fail(exc: BiasevalError) -> None:
    click.echo(f"error: {redact(str(exc))}", err=True)
    sys.exit(exc.exit_code)


class _Group(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BiasevalError as exc:
            _fail(exc)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="biaseval")
def main() -> None:
    """Measure gender bias in machine translation: test suites × MT systems, on Ray, into Parquet."""


@main.command()
@click.option("--config", "config_path", required=True, type=click.Path(path_type=Path), help="run config (YAML)")
@click.option("--out", required=True, help="run directory, or an object-store URI (s3://bucket/prefix, gs://...); "
                                         "reused to resume")
@click.option("--systems", default=None, help="comma-separated subset of the config's systems")
@click.option("--address", default=None, help="Ray cluster address (default: RAY_ADDRESS, else a local Ray)")
@click.option("--refresh", is_flag=True, help="translate everything afresh (ignore the translation store); needs a new --out")
@click.option("--no-report", is_flag=True, help="skip report.md and report.html (labels and metrics are written; "
                                                 "biaseval score writes the reports later)")
@click.option("--verbose", is_flag=True, help="also show Ray's own warnings and what its workers print (each "
                                              "ShardWorker names its node)")
def sweep(config_path: Path, out: str, systems: str | None, address: str | None, refresh: bool, no_report: bool,
          verbose: bool) -> None:
    """Translate every suite with every system, then score and write the reports.

    While it translates, stderr shows per system the texts sent and the items written, with rate and
    time left (one plain line every 10 s when stderr is not a terminal: BIASEVAL_PROGRESS_S). It ends
    with the headline numbers and where the reports are.

    \b
    Exit status:
      0  done; items that recorded outputs lack (sources edited after
         recording) are named at the end, and are no error: a rerun
         cannot add them
      2  bad input (config, data, an --out that cannot be used)
      3  stopped part-way (a worker or backend failed, a full disk):
         a rerun resumes
      4  a live system left texts without a translation (each recorded
         with its error): a rerun retries them"""
    from biaseval.pipeline import sweep as run_sweep

    summary = run_sweep(config_path, out, systems=systems.split(",") if systems else None, address=address,
                        refresh=refresh, report=not no_report, verbose=verbose)
    s = summary.sweep
    click.echo(f"sweep: {s.items:,} items in {_count(s.shards, 'shard')} ({s.skipped:,} reused); "
               f"{s.sent:,} texts sent; {summary.seconds:.1f} s")
    _ending(summary.run, summary.metrics, report=not no_report)
    if s.failed:
        click.echo(f"warning: {s.failed:,} items of live systems have no translation (see the error column of "
                   f"labels.parquet and report.md); rerun the same command to retry them", err=True)
        sys.exit(4)


def _ending(run, metrics, *, report: bool) -> None:
    """A run's last lines: its headline numbers, the items without a translation, where the files are."""
    from biaseval.pipeline import summary_lines

    lines = summary_lines(run, metrics)
    if lines:
        click.echo("\n".join(lines).rstrip("\n"))
    for line in _untranslated(run):
        click.echo(line, err=True)
    reports = [_where(run, "report.html"), _where(run, "report.md")] if report else []
    click.echo("\n".join([f"report: {where}" for where in reports]
                          + [f"metrics: {_where(run, 'metrics.parquet')} ({metrics.height:,} rows)"]))


def _count(n: int, thing: str) -> str:
    return f"{n:,} {thing}{'s' if n != 1 else ''}"


def _untranslated(run) -> list[str]:
    """A note per system whose items have no translation in labels.parquet: what recorded outputs lack
    (no rerun adds it), what a live system failed to translate (a rerun retries it)."""
    from biaseval.report.markdown import read_failures
    from biaseval.translate import TRANSLATORS
    from biaseval.translate.base import TextTranslator

    if not run.labels.exists():
        return []
    systems = run.read_run()["systems"]
    lines = []
    for (system,), rows in read_failures(run.labels).group_by(["system"], maintain_order=True):
        items, error = int(rows["items"].sum()), (rows["error"][0] or "").strip().split("\n")[0]
        error = error if len(error) <= 160 else error[:159] + "…"  # one line: the error column has it all
        if issubclass(TRANSLATORS.get(systems[system]["backend"]), TextTranslator):
            lines.append(f"warning: {system}: {items:,} items have no translation (e.g. {error})")
        else:
            lines.append(f"note: {system}: {items:,} items have no recorded output (e.g. {error}); they are left "
                         f"out of the metrics, and a rerun cannot add them")
    return lines


@main.command()
@click.option("--config", "config_path", required=True, type=click.Path(path_type=Path))
@click.option("--systems", default=None, help="comma-separated subset of the config's systems")
@click.option("--refresh", is_flag=True, help="plan as if nothing were cached")
def plan(config_path: Path, systems: str | None, refresh: bool) -> None:
    """What a sweep would send and cost, per system, after the translation store; sends nothing."""
    from biaseval.pipeline import load
    from biaseval.run.estimate import estimate, format_estimates, format_samples

    config, prepared = load(config_path, systems.split(",") if systems else None)
    click.echo(format_estimates(estimate(prepared, refresh=refresh)))
    if config.monitor is not None and config.monitor.sample is not None:
        click.echo(format_samples(prepared))


@main.command()
@click.option("--config", "config_path", required=True, type=click.Path(path_type=Path))
@click.option("--dry-run", is_flag=True, help="measure and compare, but write no history and notify no one")
@click.option("--address", default=None, help="Ray cluster address (default: RAY_ADDRESS, else a local Ray)")
def monitor(config_path: Path, dry_run: bool, address: str | None) -> None:
    """Translate afresh, compare every system with its baseline, record the history, raise the alarm.

    Exits 5 when a significant change was found, 7 when a provider reported another model than at the
    baseline and no metric moved, 6 when a system could not be measured (provider down, out of quota)
    and nothing else happened, 0 otherwise; plus 10 when a notification that was due could not be
    delivered (docs/monitoring.md)."""
    from biaseval.monitor.run import run_monitor
    from biaseval.run.cost import money

    result = run_monitor(config_path, dry_run=dry_run, address=address)
    for s in result.systems:
        extra = f" — {s.message}" if s.message else ""
        click.echo(f"{s.system}: {s.status}{extra}" + (f" (baseline: {s.baseline})" if s.baseline else ""))
        for change in result.summary["systems"][[x.system for x in result.systems].index(s.system)]["significant_changes"]:
            click.echo(f"    {change['suite']} {change['subset']} {change['metric']}: {change['baseline_value']:.4f} -> "
                       f"{change['value']:.4f} ({change['change']:+.4f} [{change['change_low']:+.4f}, {change['change_high']:+.4f}])")
    where = result.run.root if result.run else "(no run directory)"
    click.echo(f"monitor: {'ALARM' if result.alarm else 'no significant change'} (verdict: {result.verdict}); "
               f"{result.history_rows} history rows{' (dry run: none written)' if dry_run else ''}; "
               f"details in {where}/drift.md")
    cost = result.summary.get("cost")
    if cost:
        click.echo(f"monitor: cost {money(cost['billed'])} billed (estimated {money(cost['planned'])})")
    for failure in result.undelivered:
        click.echo(f"monitor: notification NOT delivered: {failure}")
    sys.exit(result.exit_code)


@main.command()
@click.option("--config", "config_path", required=True, type=click.Path(path_type=Path))
@click.option("--metric", default=None, help="only this metric (e.g. acc, p_f, tgbi)")
@click.option("--system", default=None)
@click.option("--suite", default=None)
@click.option("--subset", default=None, help="only this subset (e.g. all)")
@click.option("--last", "last", type=int, default=None, help="only the latest N runs")
@click.option("--csv", "as_csv", is_flag=True, help="CSV on stdout instead of a table")
def trend(config_path: Path, metric: str | None, system: str | None, suite: str | None, subset: str | None,
          last: int | None, as_csv: bool) -> None:
    """The monitor's history over time: one row per run × series (oldest first), with the value, its
    interval, the change from the baseline, its adjusted p and whether it was significant."""
    import polars as pl

    from biaseval.monitor.history import history

    table = history(config_path)
    if table is None:
        click.echo("no monitoring runs yet")
        return
    for column, wanted in (("metric", metric), ("system", system), ("suite", suite), ("subset", subset)):
        if wanted:
            table = table.filter(pl.col(column) == wanted)
    if last:
        runs = table.select("run_id", "created_at").unique().sort("created_at").tail(last)["run_id"]
        table = table.filter(pl.col("run_id").is_in(runs.to_list()))
    columns = [c for c in ("created_at", "run_id", "system", "suite", "subset", "metric", "value", "ci_low", "ci_high",
                           "change", "p_adjusted", "significant") if c in table.columns]
    table = table.sort("created_at", "system", "suite", "subset", "metric").select(columns).with_columns(
        pl.col("created_at").dt.strftime("%Y-%m-%dT%H:%M:%SZ"))
    if as_csv:
        click.echo(table.write_csv(), nl=False)
        return
    with pl.Config(tbl_rows=-1, tbl_cols=-1, fmt_str_lengths=60, tbl_width_chars=10_000, tbl_hide_dataframe_shape=True):
        click.echo(table)


def _where(run, name: str) -> str:
    """A run file as the user can find it: its local path, or its URI for a remote run."""
    return run.remote.uri(name) if run.remote is not None else str(run.root / name)


@main.command()
@click.option("--run", "run_dir", required=True, help="run directory or object-store URI")
def score(run_dir: str) -> None:
    """Recompute labels, metrics and reports of a finished run (no translation); ends like a sweep, with
    the headline numbers and where the reports are."""
    from biaseval.pipeline import score as score_run
    from biaseval.run.filesystem import is_remote
    from biaseval.run.rundir import RunDir

    if not is_remote(run_dir) and not Path(run_dir).is_dir():
        raise click.BadParameter(f"{run_dir}: not a directory", param_hint="--run")
    metrics = score_run(run_dir)
    _ending(RunDir(run_dir), metrics, report=True)


@main.command()
@click.option("--run", "run_dir", required=True, type=click.Path(path_type=Path), help="run directory")
@click.option("--system", default=None, help="only this system's outputs")
@click.option("--suite", default=None, help="only this suite's")
@click.option("--language", default=None, help="only this target language's (e.g. es)")
@click.option("--outcome", type=click.Choice(["wrong", "right", "unscored"]), default=None,
              help="wrong or right by the suite's headline share; unscored: not counted in it")
@click.option("--limit", type=click.IntRange(min=0), default=20, show_default=True, help="at most this many (0: all)")
@click.option("--format", "fmt", type=click.Choice(["text", "jsonl", "csv"]), default="text", show_default=True)
def examples(run_dir: Path, system: str | None, suite: str | None, language: str | None, outcome: str | None,
             limit: int, fmt: str) -> None:
    """The translations behind a run's numbers: source, translation, gold gender, label, and the words
    that decided it (between ⟦ ⟧ in text), from the run's examples.parquet (a bounded sample: the wrong
    outputs first). jsonl and csv carry the same columns for scripts."""
    from biaseval.errors import RunDirError
    from biaseval.report.examples import choose, csv_text, jsonl, load, text_lines
    from biaseval.run.rundir import RunDir

    run = RunDir(run_dir)
    found = load(run.examples)
    if found is None:
        raise RunDirError(f"{run.examples}: not found; score the run with this biaseval first "
                          f"(biaseval score --run {run_dir})")
    chosen = choose(found, system, suite, language, outcome, limit or None)
    if fmt == "jsonl":
        click.echo(jsonl(chosen), nl=False)
    elif fmt == "csv":
        click.echo(csv_text(chosen), nl=False)
    else:
        click.echo("\n".join(text_lines(chosen)) if chosen.height else "no examples match", nl=chosen.height == 0)


@main.command()
@click.option("--config", "config_path", required=True, type=click.Path(path_type=Path))
@click.option("--data/--no-data", default=True, help="also load datasets and check recorded outputs")
@click.option("--install-system-packages", "install", is_flag=True,
              help="first apt-get the Debian packages the run needs that are missing here (Apertium and its "
                   "language pairs, the analysers), as root or with sudo (make sweep does)")
def validate(config_path: Path, data: bool, install: bool) -> None:
    """Check a config (names, fields, datasets, recorded files, open models and their language pairs,
    the Debian packages it runs) without running anything: no weights loaded, no client built."""
    from biaseval.config import load_config
    from biaseval.data.yamlio import read_yaml
    from biaseval.run.plan import missing_system_packages, prepare, shards_of

    if install:
        _install_system_packages(config_path)
    config = load_config(config_path)
    if data:
        try:
            prepared = prepare(config, config_path.resolve().parent)
        except BiasevalError as exc:  # named at the config's file and line, like every check before
            raise read_yaml(config_path, "config").locate(exc) from None
        shards = shards_of(prepared)
        items = sum(s.size for s in shards)  # an item per suite item and system that translates it
        sizes = f"{_count(len(config.systems), 'system')}, {_count(len(config.suites), 'suite')}"
        click.echo(f"{config_path}: ok — {sizes}: {items:,} items in {_count(len(shards), 'shard')}")
        absent = missing_system_packages(prepared)
        if absent:  # needed where the systems run: here for a local sweep, on a cluster's workers otherwise
            from biaseval.system_packages import missing_message

            click.echo(f"note: not on this machine, {missing_message(absent)}", err=True)
    else:
        click.echo(f"{config_path}: ok (names and fields)")


def _install_system_packages(config_path: Path) -> None:
    """apt-get what the config needs until nothing is missing (a missing analyser is found when the
    config is loaded, one language at a time); exit 2 with the one message when that cannot be done."""
    from biaseval import system_packages
    from biaseval.config import load_config
    from biaseval.run.plan import missing_system_packages, prepare

    for _ in range(12):
        try:
            absent = missing_system_packages(prepare(load_config(config_path), config_path.resolve().parent))
        except system_packages.MissingPackages as exc:
            absent = exc.names
        if not absent:
            return
        if not system_packages.apt_install(absent):
            sys.exit(2)
    raise click.ClickException("the Debian packages are still missing after installing them")


@main.command("list")
@click.argument("kind", type=click.Choice(["suites", "backends", "detectors", "datasets"]))
def list_(kind: str) -> None:
    """List the registered suites, backends, detectors or datasets."""
    if kind == "suites":  # items counted where the data is here already: nothing is downloaded
        from biaseval.suites.catalogue import catalogue, languages

        rows = [("suite", "items", "languages", "scorer", "detectors", "source")]
        rows += [(e.name, f"{e.items:,}" if e.items is not None else "—", languages(e), e.scorer, ",".join(e.detectors),
                  e.source + (f" ({e.why})" if e.why else "")) for e in catalogue()]
        widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]) - 1)]
        for row in rows:
            click.echo("  ".join([row[0].ljust(widths[0]), row[1].rjust(widths[1]),
                                  *(c.ljust(w) for c, w in zip(row[2:-1], widths[2:])), row[-1]]))
    elif kind == "backends":
        from biaseval.translate import TRANSLATORS

        for name, cls in TRANSLATORS.items():
            summary = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
            click.echo(f"{name:12s} {summary.replace('``', '')}")
    elif kind == "detectors":
        from biaseval.label.rules import builtin

        for name, rs in builtin().items():
            click.echo(f"{rs.signature:22s} {rs.doc}")
    else:
        from biaseval.data.datasets import registry

        for name, spec in registry().items():
            click.echo(f"{name:24s} {spec.short}  {len(spec.files)} files")


@main.group()
def data() -> None:
    """Datasets: list, fetch, verify."""


@data.command("list")
def data_list() -> None:
    """Registered datasets and where each is found."""
    from biaseval.data.datasets import registry, resolve

    for name, spec in registry().items():
        try:
            where = f"{resolve(name, download=False).root}"
        except BiasevalError:
            where = "not available locally"
        click.echo(f"{name:24s} {spec.short}  {len(spec.files):3d} files  {where}")


@data.command("fetch")
@click.argument("names", nargs=-1)
def data_fetch(names: tuple[str, ...]) -> None:
    """Download datasets into the cache (all when no name is given) and verify them."""
    from biaseval.data.datasets import registry, resolve

    for name in names or list(registry()):
        local = resolve(name, download=True)
        local.verify()
        click.echo(f"{name}: {local.root} ({local.origin}, {len(local.spec.files)} files verified)")


@data.command("verify")
@click.argument("names", nargs=-1)
def data_verify(names: tuple[str, ...]) -> None:
    """Check every registered file of the datasets against its SHA-256."""
    from biaseval.data.datasets import registry, resolve

    for name in names or list(registry()):
        local = resolve(name, download=False)
        local.verify()
        click.echo(f"{name}: ok, {len(local.spec.files)} files at {local.root}")


@data.command("checksums")
@click.argument("root", type=click.Path(path_type=Path, exists=True, file_okay=False))
def data_checksums(root: Path) -> None:
    """Print the ``files:`` block of a registry entry for the files under ROOT."""
    from biaseval.data.datasets import checksums_yaml

    click.echo(checksums_yaml(root), nl=False)


for _group in (suite_commands.winomt, suite_commands.gest, suite_commands.mtgeneval):
    main.add_command(_group)


def run_command(command: str, argv: list[str] | None = None) -> int:
    """``biaseval COMMAND ARGV...`` in this process; returns the exit status the command line would
    exit with (0 done, 2 bad config or usage, 4 texts a live system left untranslated, 5 drift, ...).
    The entry points in jobs/ are this, so a Ray job ends with the CLI's status."""
    try:
        main.main(args=[command, *(sys.argv[1:] if argv is None else argv)], prog_name="biaseval")
    except SystemExit as exc:  # click's standalone mode always ends here
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


if __name__ == "__main__":
    main()
